// Package service runs the sandboxes: one Docker container with a virtual
// desktop per project, its state machine (starting, running, stopping,
// stopped, error), the runs of its container, startup reconciliation and
// Docker's events, the image it is made from, and the events clients hear.
// It declares the small part of Docker it uses (Docker) and the sentinel
// errors adapters map to their own codes.
//
// It owns the decisions, not the details: the project's files are
// projectfs's, the channel into the desktop is desktop's, the build context
// imagebuild's. It knows nothing of JSON-RPC, the agent tools or
// go-dockerclient.
package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/imagebuild"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/rs/zerolog"
)

// Config is how a Manager runs sandboxes. Zero fields take the defaults.
type Config struct {
	// Image is the tag of the desktop image (DefaultImage).
	Image string
	// Resources is the desktop image's build context (the embedded resources).
	Resources fs.FS
	// BrowserImage is the tag of the browser image (BrowserTag(Image)).
	BrowserImage string
	// BrowserResources is the browser image's build context, a layer on
	// the desktop image; nil means the sidecar has no browser variant.
	BrowserResources fs.FS
	// Seccomp is the seccomp profile (JSON) of browser sandboxes: Docker's
	// default plus what Chromium's own sandbox needs. "" leaves Docker's.
	Seccomp string
	// DefaultVariant is the image variant of a project that names none
	// (VariantBrowser, or VariantDesktop without BrowserResources).
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
	// Policy is where the user's lifecycle policy comes from (policy.go).
	Policy PolicyConfig
	// DesktopPorts carries the desktop ports of a sandbox without a
	// network (sandbox.network "none"), for which the engine publishes
	// none; nil refuses such a sandbox.
	DesktopPorts DesktopPorts
	// Probe checks a started desktop; nil means the real check
	// (desktop.Probe). Unit tests replace it.
	// viewerPath is the container's LabelViewer.
	Probe func(ctx context.Context, wsPort int, viewerPath string) error
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
		c.Image = DefaultImage
	}
	if c.BrowserImage == "" {
		c.BrowserImage = BrowserTag(c.Image)
	}
	if c.DefaultVariant == "" {
		c.DefaultVariant = VariantDesktop
		if c.BrowserResources != nil {
			c.DefaultVariant = VariantBrowser
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
	if c.Probe == nil {
		c.Probe = func(ctx context.Context, wsPort int, viewerPath string) error {
			return desktop.Probe(ctx, "127.0.0.1", wsPort, viewerPath)
		}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Manager runs the sandboxes of every project. It is safe for concurrent use.
type Manager struct {
	docker Docker
	cfg    Config
	log    zerolog.Logger
	build  imagebuild.Context
	// browserBuild is the browser image's context, hashed on the desktop's.
	browserBuild imagebuild.Context
	registry     *projectfs.Registry
	locks        projectfs.Locks
	approvals    projectfs.Approvals // the user's approvals (approval.go)
	events       broker
	policy       *policy // the user's lifecycle policy (policy.go)

	reconciled     chan struct{} // closed once Run first looked at Docker
	reconciledOnce sync.Once

	imageMu sync.Mutex // serializes image checks and builds

	// unready passes Run the projects whose running container's desktop
	// does not answer yet (readiness.go).
	unready chan string

	mu    sync.Mutex      // guards boxes
	boxes map[string]*box // by canonical project path
}

// box is one project's sandbox as the manager knows it.
type box struct {
	project string
	// op holds a token while a mutation (start, stop, remove, refresh) runs on
	// the project: mutations of one project are serialized.
	op chan struct{}
	// flock is the project's lock file while this process holds it
	// (projectlock.go), and lockless says it could not be made, so this
	// process works on the project with its own lock only. Only the holder
	// of the op token touches them.
	flock    *projectfs.Lock
	lockless bool
	// settingsMu serializes writes of .pilot/settings.json, which must not
	// wait for a start.
	settingsMu sync.Mutex

	mu    sync.Mutex // guards the fields below, and those of run
	state *State     // nil: the project has no sandbox
	run   *run       // the current run of its container, once seen running
	// failed is the container whose last start failed, and why: a stopped
	// container that stays an error until it starts or is stopped.
	failed struct{ id, why string }
	// term is the last SIGTERM Docker reported sending the container from
	// outside (docker stop): it is stopping until it dies.
	term struct {
		id string
		at time.Time
	}
	reported map[string]string // file -> the problem last reported with it
	// stopReason says why the policy stopped a container (idle.go), and
	// disk what its layer measured last (disk.go).
	stopReason stopReason
	disk       diskUse
}

func (b *box) lock(ctx context.Context) error {
	select {
	case b.op <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *box) tryLock() bool {
	select {
	case b.op <- struct{}{}:
		return true
	default:
		return false
	}
}

func (b *box) unlock() { <-b.op }

func (b *box) snapshot() *State {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == nil {
		return nil
	}
	st := *b.state
	return &st
}

// New returns a manager. It does not touch Docker until it is used.
func New(docker Docker, cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	if cfg.Resources == nil {
		return nil, errors.New("service: Config.Resources is required")
	}
	build, err := imagebuild.NewContext(cfg.Resources, cfg.BuildArgs)
	if err != nil {
		return nil, fmt.Errorf("read image resources: %w", err)
	}
	var browserBuild imagebuild.Context
	if cfg.BrowserResources != nil {
		browserBuild, err = imagebuild.NewContext(cfg.BrowserResources, map[string]string{"DESKTOP": cfg.Image})
		if err != nil {
			return nil, fmt.Errorf("read browser image resources: %w", err)
		}
		browserBuild = browserBuild.On(build.Hash)
	}
	m := &Manager{
		docker:       docker,
		cfg:          cfg,
		log:          cfg.Logger,
		build:        build,
		browserBuild: browserBuild,
		boxes:        map[string]*box{},
		unready:      make(chan string, 64),
		policy:       newPolicy(cfg.Policy, cfg.StateDir),
		reconciled:   make(chan struct{}),
	}
	m.locks = projectfs.NewLocks(cfg.StateDir)
	m.approvals = projectfs.NewApprovals(cfg.StateDir)
	m.registry, err = projectfs.OpenRegistry(cfg.StateDir)
	if err != nil {
		// The registry only helps clean up; a broken one must not stop the sidecar.
		m.log.Warn().Err(err).Str("file", m.registry.Path()).Msg("project registry unreadable; starting with an empty one")
	}
	return m, nil
}

// ImageHash is the build hash the default variant's image of this binary
// carries.
func (m *Manager) ImageHash() string {
	images := m.imagesFor(m.cfg.DefaultVariant)
	return images[len(images)-1].build.Hash
}

// Image is the default variant's image tag.
func (m *Manager) Image() string { return m.tagFor(m.cfg.DefaultVariant) }

// StateDir is the sidecar's XDG state directory ("" for none).
func (m *Manager) StateDir() string { return m.cfg.StateDir }

// Subscribe returns the manager's events and the function that ends the
// subscription. The channel is closed when the subscription ends.
func (m *Manager) Subscribe() (<-chan Event, func()) { return m.events.subscribe() }

// box returns the project's box, creating it on first use.
func (m *Manager) box(project string) *box {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[project]
	if !ok {
		b = &box{project: project, op: make(chan struct{}, 1)}
		m.boxes[project] = b
	}
	return b
}

func (m *Manager) allBoxes() []*box {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*box, 0, len(m.boxes))
	for _, b := range m.boxes {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *box) int {
		switch {
		case a.project < b.project:
			return -1
		case a.project > b.project:
			return 1
		}
		return 0
	})
	return out
}

// commit makes st the project's state: it announces a change and saves
// .pilot/sandbox.json when the change is one a restarted sidecar must know.
func (m *Manager) commit(b *box, st *State) {
	b.mu.Lock()
	prev := b.state
	if st != nil {
		st.DiskBytes = b.disk.of(st.ContainerID)
		cp := *st
		b.state = &cp
	} else {
		b.state = nil
	}
	b.mu.Unlock()
	if sameState(prev, st) {
		return
	}
	m.persist(b, prev, st)
	// Subscribers get their own copy: st stays the caller's.
	var published *State
	if st != nil {
		cp := *st
		published = &cp
	}
	if dropped := m.events.publish(Event{Kind: EventState, Project: b.project, State: published}); dropped > 0 {
		m.log.Warn().Int("subscribers", dropped).Msg("event dropped for subscribers that stopped reading")
	}
}

// progress announces a step of a long operation.
func (m *Manager) progress(project, stage, msg string, current, total int) {
	m.events.publish(Event{Kind: EventProgress, Project: project, Progress: Progress{
		ProjectPath: project, Stage: stage, Message: msg, Current: current, Total: total,
	}})
}

// DockerStatus is what the sidecar knows of the Docker engine (PROTOCOL.md).
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
