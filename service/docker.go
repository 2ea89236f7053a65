package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// Docker is the part of a Docker engine the manager uses. The engine package
// implements it on a real engine; unit tests use hand-written fakes.
//
// Implementations return errors wrapping ErrDockerUnavailable when no engine
// answers, ErrContainerNotFound / ErrImageNotFound / ErrNameConflict for those
// conditions, and ErrTimeout when the engine did not answer in time.
type Docker interface {
	// Engine is what the images need: their labels, builds, pulls and
	// removal (package images).
	images.Engine
	// Info reports the engine's endpoint and version, or an
	// ErrDockerUnavailable error.
	Info(ctx context.Context) (EngineInfo, error)
	// Capacity reports the CPUs and memory the engine has.
	Capacity(ctx context.Context) (Capacity, error)
	// CreateContainer creates (does not start) a container and returns its ID.
	CreateContainer(ctx context.Context, spec ContainerSpec) (string, error)
	// CopyTo extracts a tar archive into dir inside the container, which may
	// be stopped.
	CopyTo(ctx context.Context, id, dir string, archive io.Reader) error
	// StartContainer starts a created or stopped container. It fails with
	// ErrPortInUse when the engine could not publish a port.
	StartContainer(ctx context.Context, id string) error
	// UpdateLimits changes a container's memory, CPU and process limits
	// (not /dev/shm, which is fixed at creation).
	UpdateLimits(ctx context.Context, id string, limits Limits) error
	// StopContainer stops the container, killing it after grace.
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	// PauseContainer freezes every process of a running container (the
	// cgroup freezer); UnpauseContainer thaws them.
	PauseContainer(ctx context.Context, id string) error
	UnpauseContainer(ctx context.Context, id string) error
	// MemoryUsage is the memory a container's processes hold now, as
	// docker stats counts it (without the inactive page cache).
	MemoryUsage(ctx context.Context, id string) (int64, error)
	// RemoveContainer removes the container and its anonymous volumes, running
	// or not.
	RemoveContainer(ctx context.Context, id string) error
	// InspectContainer looks a container up by ID or name.
	InspectContainer(ctx context.Context, idOrName string) (Container, error)
	// ListContainers lists all containers, running or not, that carry every
	// one of the labels.
	ListContainers(ctx context.Context, labels map[string]string) ([]Container, error)
	// Exec runs a command in a running container. It returns when the command
	// ends, or when spec.Timeout passes (TimedOut set), whichever is first.
	Exec(ctx context.Context, id string, spec ExecSpec) (ExecResult, error)
	// ExecAttach starts a command with its stdin and stdout attached and
	// returns at once. The command runs until it exits or the session is
	// closed (which closes its stdin).
	ExecAttach(ctx context.Context, id string, spec ExecSpec) (ExecSession, error)
	// DiskUsage measures the container's own files: the size of its
	// writable layer, what it wrote beyond its image. The engine walks
	// the layer to answer, so it is not free (see the disk policy).
	DiskUsage(ctx context.Context, id string) (int64, error)
	// Logs returns the last lines of the container's output.
	Logs(ctx context.Context, id string, lines int) ([]string, error)
	// Archive is the archive API, for the sandbox's files (package
	// sandboxfs).
	sandboxfs.Archive
	// Events streams lifecycle events of the containers that carry every one
	// of the labels. The channel is closed when ctx ends or the stream
	// breaks; events may be lost, so a closed channel calls for a resync.
	Events(ctx context.Context, labels map[string]string) (<-chan ContainerEvent, error)
}

// EngineInfo describes the Docker engine in use.
type EngineInfo struct {
	Endpoint   string
	Version    string
	APIVersion string
}

// ContainerSpec is what the manager asks of a new sandbox container.
type ContainerSpec struct {
	Name   string
	Image  string
	Labels map[string]string
	Env    []string
	// Ports are container TCP ports to publish on HostIP with host ports the
	// engine chooses.
	Ports  []int
	HostIP string
	// NoNetwork gives the container no network but its loopback, and
	// publishes none of Ports.
	NoNetwork bool
	Limits    Limits
	// DiskBytes bounds the container's writable layer where the engine's
	// storage driver can (overlay2 on xfs with pquota, btrfs, zfs); the
	// disk policy measures it everywhere. Zero is no bound.
	DiskBytes int64
	// Seccomp is the container's seccomp profile as JSON; "" is Docker's
	// default.
	Seccomp string
	// User and Entrypoint, when set, replace the image's: a project's own
	// image may end as USER root, and must still run the desktop as its
	// own user.
	User       string
	Entrypoint []string
}

// Capacity is what the Docker engine has to give: a sandbox cannot have
// more CPUs than it (Docker refuses), nor usefully more memory.
type Capacity struct {
	CPUs        int
	MemoryBytes int64
}

// Limits are the resource and privilege limits of a sandbox container.
type Limits struct {
	MemoryBytes int64
	NanoCPUs    int64
	PidsLimit   int64
	ShmBytes    int64
}

// Container is what the manager needs to know of a container.
type Container struct {
	ID      string
	Name    string
	Image   string
	Labels  map[string]string
	Running bool
	// State is Docker's word for it: created, running, paused, restarting,
	// removing, exited or dead.
	State      string
	ExitCode   int
	OOMKilled  bool
	Error      string
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	// Ports maps published container TCP ports to their host ports, and
	// HostIPs to the address each is bound to; empty while the container is
	// not running.
	Ports   map[int]int
	HostIPs map[int]string
	Env     []string
	// NoNetwork says the container has no network but its loopback
	// (ContainerSpec.NoNetwork): the engine publishes none of its ports.
	NoNetwork bool
	// IP is the container's own address on its network, as the engine
	// gives it ("" without one): what the sidecar's direct routes dial,
	// never an address a program in the sandbox names.
	IP string
	// Limits are the container's resource limits.
	Limits Limits
}

// Paused says whether the container is frozen (docker pause): Docker
// reports it running too.
func (c Container) Paused() bool { return c.Running && c.State == "paused" }

// ExecSpec is a command to run in a container.
type ExecSpec struct {
	Cmd     []string
	User    string
	Env     []string
	WorkDir string
	Stdin   io.Reader
	// Timeout bounds the whole call; zero means no bound beyond ctx.
	Timeout time.Duration
	// MaxOutput caps stdout and stderr each; zero means no cap. Output past
	// the cap is read and dropped, and Truncated is set.
	MaxOutput int
	// Stdout and Stderr, when set, take the output as it comes instead of
	// the result (whose Stdout and Stderr stay empty, MaxOutput unused).
	// Both are written from one goroutine, in the order the engine sent
	// the output, and never after Exec returns.
	Stdout, Stderr io.Writer
	// Cause is what the command runs for, for the network's hints
	// (Network.ExecEnv); the engine does not read it.
	Cause ExecCause
	// Finished, when closed, tells Exec the command is over though its
	// output may still be open (a background child holds it): Exec stops
	// reading and returns at once, with ExitCode -1 (the caller knows it;
	// the engine may not say it until the output closes).
	Finished <-chan struct{}
	// Terminal, when set, runs the command on a terminal of its own, as
	// docker exec -t does: one output stream, to Stdout (and ExitCode from
	// the engine). Its sizes come from Terminal, the first at the start,
	// until Exec returns.
	Terminal <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct{ Width, Height int }

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	TimedOut  bool
	Truncated bool
}

// ExecSession is a running command's standard input and output. Reads end
// with io.EOF when the command's output ends.
type ExecSession interface {
	io.Reader
	io.Writer
	// Close ends the session: the command's stdin is closed and the stream
	// is torn down. It is safe to call more than once.
	Close() error
	// Stderr is what the command wrote to its stderr so far (the first 64 KiB).
	Stderr() string
}

// ContainerEvent is a change to a container seen in the engine's event stream.
type ContainerEvent struct {
	ContainerID string
	Action      string // create, start, die, stop, destroy, ...
	Labels      map[string]string
	Time        time.Time
}

// The manager finds its containers by name and labels: a project's
// container has a name derived from the project's path, and carries the
// manager's scope and the project.

// Labels on every sandbox container, and on the image.
const (
	LabelSandbox = "pilot.sandbox"
	LabelProject = "pilot.project"
	// LabelVariant, set on the container when it is created, is the kind
	// of image it runs: images.VariantDesktop, VariantBrowser or
	// VariantProject. On the container, not the image, so a project's
	// Dockerfile cannot claim another.
	LabelVariant = "pilot.sandbox.variant"
)

// ContainerName is the sandbox container's name for a canonical project path:
// readable, and the same every time, so that the engine itself refuses a
// second container for one project (two sidecars, or a crash mid-create).
// It is the name of a sandbox without an owner (owner.go): made before
// owners, or by a manager that has none; OwnedContainerName is the rest's.
func ContainerName(project string) string { return containerName(project, project) }

// containerName is a sandbox container's name: a slug of the project's
// base name, and a hash of key.
func containerName(project, key string) string {
	sum := sha256.Sum256([]byte(key))
	slug := slugify(filepath.Base(project))
	if slug == "" {
		slug = "project"
	}
	return "pilot-sandbox-" + slug + "-" + hex.EncodeToString(sum[:])[:10]
}

// slugify keeps what Docker allows in a name, lowercased, at most 24 bytes.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 24 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// DefaultScope is the value of the pilot.sandbox label on real sandboxes.
const DefaultScope = "true"

// projectLabels are the labels of an owner's sandbox container for a
// project (no owner: none).
func projectLabels(scope, owner, project string) map[string]string {
	labels := map[string]string{LabelSandbox: scope, LabelProject: project}
	if owner != "" {
		labels[LabelOwner] = owner
	}
	return labels
}

// scopeLabels select every sandbox container of a scope.
func scopeLabels(scope string) map[string]string {
	return map[string]string{LabelSandbox: scope}
}

// HelperSpec is a container that runs beside a sandbox, in the sandbox's
// network namespace, with the caller attached to its stdin and stdout: it
// is removed when it exits, and its stdin closes when the caller lets go.
// It holds no capability but CapAdd, cannot gain any (no-new-privileges),
// and writes nothing to its image (a read-only root file system).
type HelperSpec struct {
	Image  string
	Labels map[string]string
	User   string
	Cmd    []string // replaces the image's entrypoint
	// NetworkOf is the running container whose network namespace it joins.
	NetworkOf string
	CapAdd    []string
	Limits    Limits
}
