// Package service runs the sandboxes: one Docker container with a virtual
// desktop per project. It keeps each sandbox's state machine (starting,
// running, stopping, stopped, error) and makes its decisions: how a start
// goes (the container a project's settings make, what waits for the user's
// approval, when the desktop counts as ready), how a stop or a removal ends
// it, how the state follows Docker (the first reconciliation, Docker's
// events, a resync in case one was lost), and what the user's lifecycle
// policy stops or refuses (idle, disk, maxRunning, limits above the caps).
// It declares the small part of Docker it uses (Docker), the sentinel
// errors adapters map to their own codes, and the events clients hear.
//
// It must not know the details it hands on: the images and their builds
// are images', the project's files and the user's state projectfs's, the
// channel into a desktop desktop's, how a run proves ready (the wait for
// a desktop, the marks of the user's other processes, the background
// waits) readiness's, keeping pilot-pidguard running pidguard's, a
// sandbox's files sandboxfs's, the wrappers of a command and the records
// of background processes shell's.
// It knows nothing of JSON-RPC, MCP, the agent tools or go-dockerclient.
// The commands (exec.go) stay here because each is a use of a running
// sandbox (the running gate, Touch, a recheck when it went away) and
// Manager's methods are what the adapters call.
//
// Where things are: manager.go (the Manager, its Config, the lock order),
// box.go (a project's box: its locks, and commit), state.go (State, from
// the engine's facts, and the events), start.go, stop.go, observe.go
// (refresh, resync, Run, readiness: when a run counts as running),
// project.go (what a project's files ask: approvals, the plan of its
// image, the tools' switch), policy.go
// and usage.go (the lifecycle policy: use, limits, the decision to stop
// for disk; the disk limit's arithmetic is disklimit's), owner.go (whose
// sandbox it is on a shared engine), run.go (one run of a container: passwords,
// agent, pidguard; the desktop and the files), exec.go (commands, in the
// foreground or the background), network.go (a sandbox without a
// network; what service holds of the network policy), docker.go (the
// engine's part, the containers' names), errors.go.
package service

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/readiness"
	"github.com/rs/zerolog"
)

// Config is how a Manager runs sandboxes. Zero fields take the defaults.
type Config struct {
	// Image is the tag of the desktop image (images.DefaultTag).
	Image string
	// Resources is the desktop image's build context (the embedded resources).
	Resources fs.FS
	// BrowserImage is the tag of the browser image (images.BrowserTag(Image)).
	BrowserImage string
	// BrowserResources is the browser image's build context, a layer on
	// the desktop image; nil means the sidecar has no browser variant.
	BrowserResources fs.FS
	// DevResources is the dev image's build context, a layer on the
	// browser image (its tag images.DevTag(Image)); nil means the sidecar
	// has no dev variant.
	DevResources fs.FS
	// AgentsResources is the agent CLIs' layer's build context, on any of
	// the images (sandbox.agents); nil means there is none.
	AgentsResources fs.FS
	// RecorderResources is the recorder image's build context (package
	// recording), a layer on the desktop image; nil: no recorder.
	RecorderResources fs.FS
	// Seccomp is the seccomp profile (JSON) of browser sandboxes: Docker's
	// default plus what Chromium's own sandbox needs. "" leaves Docker's.
	Seccomp string
	// DefaultVariant is the image variant of a project that names none
	// (images.VariantBrowser, or images.VariantDesktop without
	// BrowserResources).
	DefaultVariant string
	// Agent is the desktop agent's Python source (resources.DesktopAgent).
	Agent []byte
	// BuildArgs are passed to the image build, e.g. BASE_IMAGE.
	BuildArgs map[string]string
	// StateDir is the sidecar's XDG state directory (registry, logs).
	StateDir string
	// Scope is the value of the pilot.sandbox label on the manager's
	// containers, and the only one it lists and follows (DefaultScope).
	// Tests use their own, so they never touch a user's real sandboxes or
	// write into their projects.
	Scope string
	// Owner is the user whose sandboxes the manager makes and works on,
	// on an engine others may use too (owner.go): DefaultOwner() in the
	// sidecar; "" makes and finds sandboxes without an owner, as before
	// owners (the tests).
	Owner string
	// Remote says the engine runs on another machine: the ports it
	// publishes and its containers' addresses are not this machine's.
	// The manager then publishes no port, and DesktopPorts carries every
	// sandbox's desktop, as for a sandbox without a network (network.go).
	Remote bool
	// Display is the virtual display's size (desktop.DefaultDisplay).
	Display desktop.Display
	// Limits are the container's resource limits (DefaultLimits).
	Limits Limits
	// ReadyTimeout bounds the wait for a started desktop to answer (90 s).
	ReadyTimeout time.Duration
	// StopGrace is how long a stop waits before it kills (5 s).
	StopGrace time.Duration
	// ResyncInterval is how often Run checks every sandbox against Docker,
	// in case an event was lost (10 s).
	ResyncInterval time.Duration
	// InspectTimeout bounds each inspect of a resync (10 s): one wedged
	// container must not stall the others' (observe.go, refreshBounded).
	InspectTimeout time.Duration
	// Policy is where the user's lifecycle policy comes from (policy.go).
	Policy PolicyConfig
	// DesktopPorts carries the desktop ports of a sandbox whose ports
	// the engine does not publish where this machine reaches them: one
	// without a network (sandbox.network "none"), and every one on a
	// remote engine. nil refuses a sandbox without a network.
	DesktopPorts DesktopPorts
	// Network enforces the network policy of sandboxes with a network;
	// nil leaves their network as Docker gives it.
	Network Network
	// Probe checks a started desktop; nil means the real check
	// (desktop.ProbeAuth). Unit tests replace it.
	// viewerPath is the container's images.LabelViewer, password its control
	// password.
	Probe func(ctx context.Context, wsPort int, viewerPath, password string) error
	// Logger receives the manager's logs.
	Logger zerolog.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
}

// DefaultLimits keep one sandbox from taking the machine: 2 GiB of memory,
// 2 CPUs, 1024 processes, and a 1 GiB /dev/shm (Docker's 64 MB default
// crashes browsers).
var DefaultLimits = Limits{
	MemoryBytes: 2 << 30,
	NanoCPUs:    2e9,
	PidsLimit:   1024,
	ShmBytes:    1 << 30,
}

func (c Config) withDefaults() Config {
	if c.Image == "" {
		c.Image = images.DefaultTag
	}
	if c.BrowserImage == "" {
		c.BrowserImage = images.BrowserTag(c.Image)
	}
	if c.DefaultVariant == "" {
		c.DefaultVariant = images.VariantDesktop
		if c.BrowserResources != nil {
			c.DefaultVariant = images.VariantBrowser
		}
	}
	if c.Scope == "" {
		c.Scope = DefaultScope
	}
	if c.Display == (desktop.Display{}) {
		c.Display = desktop.DefaultDisplay
	}
	if c.Limits == (Limits{}) {
		c.Limits = DefaultLimits
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 90 * time.Second
	}
	if c.StopGrace == 0 {
		c.StopGrace = 5 * time.Second
	}
	if c.ResyncInterval == 0 {
		c.ResyncInterval = 10 * time.Second
	}
	if c.InspectTimeout == 0 {
		c.InspectTimeout = 10 * time.Second
	}
	if c.Probe == nil {
		c.Probe = func(ctx context.Context, wsPort int, viewerPath, password string) error {
			return desktop.ProbeAuth(ctx, "127.0.0.1", wsPort, viewerPath, password)
		}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Manager runs the sandboxes of every project. It is safe for concurrent use.
//
// Lock order: a goroutine holding one of these takes only those of a later
// step, and nothing is taken under a leaf.
//
//  1. A box's op token (lockProject, tryLockProject): one operation per
//     project. Its lock file (projectfs.Locks) is then only tried, never
//     waited for while the token is held: lockBox lets the token go
//     between tries. No one holds two boxes' tokens.
//  2. images.Builder's mu: a start's image check or build, minutes long.
//  3. policy.admitMu (an admission, over a list of the engine's
//     containers), box.settingsMu (a write of .pilot/settings.json).
//  4. The leaves: box.mu (a box's fields and its run's), policy.mu (the
//     policy file as read), Manager.mu (the boxes), the broker's mu (the
//     subscribers) and run.agentMu (a run's agent). agentMu is never
//     waited for under box.mu, as closing an agent may wait on Docker
//     (endRunLocked closes it in a goroutine of its own).
//
// Nothing waits on a channel under a lock: publish drops an event for a
// subscriber that is behind, and readiness's asks of unready are dropped
// rather than wait (readiness.Watcher).
type Manager struct {
	docker    Docker
	cfg       Config
	log       zerolog.Logger
	images    *images.Builder
	registry  *projectfs.Registry
	locks     projectfs.Locks
	approvals projectfs.Approvals // the user's approvals (project.go)
	// What a process of the user proved of a run, for the others: the
	// desktop answered (observe.go), the network's rules were loaded
	// (network.go).
	marks  readiness.Marks
	events broker
	policy *policy // the user's lifecycle policy (policy.go)

	reconciled     chan struct{} // closed once Run first looked at Docker
	reconciledOnce sync.Once

	// unready waits, in Run, for the projects whose running container's
	// desktop does not answer yet (observe.go).
	unready *readiness.Watcher

	mu    sync.Mutex      // guards boxes
	boxes map[string]*box // by canonical project path
}

// New returns a manager. It does not touch Docker until it is used.
func New(docker Docker, cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	if cfg.Resources == nil {
		return nil, errors.New("service: Config.Resources is required")
	}
	if cfg.Remote && cfg.DesktopPorts == nil {
		return nil, errors.New("service: a remote engine needs Config.DesktopPorts to carry the desktops")
	}
	m := &Manager{
		docker:     docker,
		cfg:        cfg,
		log:        cfg.Logger,
		boxes:      map[string]*box{},
		unready:    readiness.NewWatcher(64),
		policy:     newPolicy(cfg.Policy, cfg.StateDir),
		reconciled: make(chan struct{}),
	}
	var err error
	m.images, err = images.New(docker, images.Config{
		Tag: cfg.Image, Resources: cfg.Resources, BuildArgs: cfg.BuildArgs,
		BrowserTag: cfg.BrowserImage, BrowserResources: cfg.BrowserResources,
		DevResources: cfg.DevResources, RecorderResources: cfg.RecorderResources,
		AgentsResources: cfg.AgentsResources,
		Labels:          map[string]string{LabelSandbox: "image"},
		RebuildAfter:    m.rebuildAfter,
		Logger:          cfg.Logger,
		Now:             cfg.Now,
	})
	if err != nil {
		return nil, err
	}
	m.locks = projectfs.NewLocks(cfg.StateDir)
	m.approvals = projectfs.NewApprovals(cfg.StateDir)
	m.marks = readiness.NewMarks(cfg.StateDir)
	m.registry, err = projectfs.OpenRegistry(cfg.StateDir)
	if err != nil {
		// The registry only helps clean up; a broken one must not stop the sidecar.
		m.log.Warn().Err(err).Str("file", m.registry.Path()).Msg("project registry unreadable; starting with an empty one")
	}
	return m, nil
}

// ImageHash is the build hash the default variant's image of this binary
// carries.
func (m *Manager) ImageHash() string { return m.images.Hash(m.cfg.DefaultVariant) }

// Image is the default variant's image tag.
func (m *Manager) Image() string { return m.images.Tag(m.cfg.DefaultVariant) }

// EnsureImage builds the default variant's images unless images with this
// binary's build hashes exist, reporting progress for project (which may
// be "").
func (m *Manager) EnsureImage(ctx context.Context, project string) error {
	return imageErr(m.images.Ensure(ctx, m.cfg.DefaultVariant, m.imageProgress(project)))
}

// EnsureRecorder makes sure of the recorder image (package recording) and
// returns its tag. A build reports sandbox/progress (stage image) for the
// project that asked; a failed build is a LogError of ErrImageBuild, as a
// sandbox image's is.
func (m *Manager) EnsureRecorder(ctx context.Context, project string) (string, error) {
	tag, err := m.images.EnsureRecorder(ctx, m.imageProgress(project))
	return tag, imageErr(err)
}

// imageProgress reports the images' steps as the project's progress.
func (m *Manager) imageProgress(project string) images.Report {
	return func(msg string, current, total int) { m.progress(project, StageImage, msg, current, total) }
}

// rebuildAfter is the policy's age past which an image is rebuilt.
func (m *Manager) rebuildAfter() time.Duration {
	policy, _ := m.currentPolicy()
	return policy.RebuildAfter
}

// StateDir is the sidecar's XDG state directory ("" for none).
func (m *Manager) StateDir() string { return m.cfg.StateDir }

// Subscribe returns the manager's events and the function that ends the
// subscription. The channel is closed when the subscription ends.
func (m *Manager) Subscribe() (<-chan Event, func()) { return m.events.subscribe() }

// DockerStatus is what the sidecar knows of the Docker engine (docs/protocol.md).
type DockerStatus struct {
	Available  bool   `json:"available"`
	Endpoint   string `json:"endpoint"`
	Version    string `json:"version,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Error      string `json:"error,omitempty"`
}

// DockerStatus asks the engine, within a few seconds, whether it is there.
func (m *Manager) DockerStatus(ctx context.Context) DockerStatus {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := m.docker.Info(ctx)
	st := DockerStatus{Endpoint: info.Endpoint, Version: info.Version, APIVersion: info.APIVersion}
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.Available = true
	return st
}

// Run reconciles the sandboxes with Docker, then follows Docker's events
// (and resyncs every ResyncInterval, in case one was lost) so that a
// container stopped, killed or removed behind the sidecar's back is noticed
// and announced. It returns when ctx ends.
func (m *Manager) Run(ctx context.Context) {
	if err := m.resync(ctx); err != nil {
		m.log.Warn().Err(err).Msg("startup reconciliation failed; retrying in the background")
	}
	m.markReconciled()
	var wg sync.WaitGroup
	wg.Go(func() { m.followEvents(ctx) })
	wg.Go(func() { m.unready.Run(ctx, m.awaitReady) })
	wg.Go(func() { m.enforcePolicy(ctx) })
	ticker := time.NewTicker(m.cfg.ResyncInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-ticker.C:
			if err := m.resync(ctx); err != nil {
				m.log.Debug().Err(err).Msg("resync failed")
			}
		}
	}
}

// Reconciled is closed once the manager's Run has looked at Docker for
// the first time (successfully or not): until then, what it knows of the
// sandboxes found at startup is incomplete.
func (m *Manager) Reconciled() <-chan struct{} { return m.reconciled }

func (m *Manager) markReconciled() { m.reconciledOnce.Do(func() { close(m.reconciled) }) }
