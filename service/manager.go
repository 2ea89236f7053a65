// Package service is the domain core of pilot-sandbox: one Docker container
// with a virtual desktop per project, its lifecycle and state machine, the
// image it runs, its state files, startup reconciliation and events.
package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Config is how a Manager runs sandboxes. Zero fields take the defaults.
type Config struct {
	// Image is the tag of the sandbox image (DefaultImage).
	Image string
	// Resources is the image's build context (the embedded resources).
	Resources fs.FS
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
	// Display is the virtual display's size (DefaultDisplay).
	Display Display
	// Limits are the container's resource limits (DefaultLimits).
	Limits Limits
	// ReadyTimeout bounds the wait for a started desktop to answer (90 s).
	ReadyTimeout time.Duration
	// StopGrace is how long a stop waits before it kills (5 s).
	StopGrace time.Duration
	// ResyncInterval is how often Run checks every sandbox against Docker,
	// in case an event was lost (10 s).
	ResyncInterval time.Duration
	// Probe checks a started desktop; nil means the real check
	// (ProbeDesktop). Unit tests replace it.
	Probe func(ctx context.Context, wsPort int) error
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
	if c.Scope == "" {
		c.Scope = DefaultScope
	}
	if c.Display == (Display{}) {
		c.Display = DefaultDisplay
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
		c.Probe = func(ctx context.Context, wsPort int) error { return ProbeDesktop(ctx, "127.0.0.1", wsPort) }
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Manager runs the sandboxes of every project. It is safe for concurrent use.
type Manager struct {
	docker   Docker
	cfg      Config
	log      zerolog.Logger
	build    buildContext
	registry *registry
	events   broker

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
	// (projectlock.go); only the holder of the op token touches it.
	flock *os.File
	// lockless: the lock file could not be made, so this process works
	// on the project with its own lock only; guarded like flock.
	lockless bool
	// settingsMu serializes writes of .pilot/settings.json, which must not
	// wait for a start.
	settingsMu sync.Mutex

	mu       sync.Mutex // guards the fields below
	state    *State     // nil: the project has no sandbox
	secret   vncSecret  // the VNC passwords of the current container
	secretOf secretKey  // the run of the container the secret belongs to
	failedID string     // the container whose last start failed
	failure  string     // why it failed
	// readyRun is the run of the container whose desktop answered;
	// unready the one that never did, and unreadyWhy says so.
	readyRun   secretKey
	unready    secretKey
	unreadyWhy string
	reported   map[string]string // file -> the problem last reported with it
	// termID and termAt: the container Docker last sent SIGTERM to from
	// outside (docker stop), and when; it is stopping until it dies.
	termID string
	termAt time.Time

	agentMu sync.Mutex // guards agent
	agent   *agent     // the desktop agent of the running container, if started
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
	build, err := newBuildContext(cfg.Resources, cfg.BuildArgs)
	if err != nil {
		return nil, fmt.Errorf("read image resources: %w", err)
	}
	m := &Manager{
		docker:  docker,
		cfg:     cfg,
		log:     cfg.Logger,
		build:   build,
		boxes:   map[string]*box{},
		unready: make(chan string, 64),
	}
	m.registry, err = openRegistry(cfg.StateDir)
	if err != nil {
		// The registry only helps clean up; a broken one must not stop the sidecar.
		m.log.Warn().Err(err).Str("file", m.registry.path).Msg("project registry unreadable; starting with an empty one")
	}
	return m, nil
}

// ImageHash is the build hash the sandbox image of this binary carries.
func (m *Manager) ImageHash() string { return m.build.hash }

// Image is the sandbox image's tag.
func (m *Manager) Image() string { return m.cfg.Image }

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

// persist keeps .pilot/sandbox.json in step with settled states; the
// transitional ones (starting, stopping) are not written. A file that
// cannot be written is reported, and the sandbox goes on as it is: the
// sidecar finds containers by name, not by this file.
func (m *Manager) persist(b *box, prev, st *State) {
	if !m.mayWrite(b) {
		return // another process is working on the project and writes
	}
	if st == nil {
		m.warn(b, sandboxFile(b.project), removeRecord(b.project))
		if err := m.registry.remove(b.project); err != nil {
			m.log.Warn().Err(err).Msg("could not update the project registry")
		}
		return
	}
	if st.Status == StatusStarting || st.Status == StatusStopping || st.ContainerID == "" {
		return // transitional, or a start that failed before there was a container
	}
	if prev != nil && sameRecord(recordOf(*prev, time.Time{}), recordOf(*st, time.Time{})) {
		return
	}
	m.saveRecord(b, *st)
}

// saveRecord writes the state to .pilot/sandbox.json, reporting what was
// wrong with the file there, if anything.
func (m *Manager) saveRecord(b *box, st State) {
	now := m.cfg.Now()
	aside, err := writeRecord(b.project, recordOf(st, now), now)
	if aside != nil {
		m.warn(b, sandboxFile(b.project), aside)
	}
	m.warn(b, sandboxFile(b.project), err)
	if err := m.registry.add(b.project); err != nil {
		m.log.Warn().Err(err).Msg("could not update the project registry")
	}
}

// ensureRecord rewrites .pilot/sandbox.json when it does not say what the
// settled state says: lost, corrupt, or edited by hand since.
func (m *Manager) ensureRecord(b *box) {
	if !m.mayWrite(b) {
		return
	}
	st := b.snapshot()
	if st == nil || st.Status == StatusStarting || st.Status == StatusStopping || st.ContainerID == "" {
		return
	}
	if rec, err := readRecord(b.project); err == nil && rec != nil && sameRecord(*rec, recordOf(*st, time.Time{})) {
		return
	}
	m.saveRecord(b, *st)
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
