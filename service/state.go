package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Status is where a sandbox is in its life.
type Status string

const (
	StatusStarting Status = "starting"
	StatusRunning  Status = "running"
	StatusStopping Status = "stopping"
	StatusStopped  Status = "stopped"
	StatusError    Status = "error"
	// StatusPaused: every process of the sandbox is frozen (docker pause,
	// the cgroup freezer), its windows and memory kept; a start resumes it.
	StatusPaused Status = "paused"
)

// transitional says whether an operation is under way: the state is what
// the operation says, not yet what Docker will.
func (s Status) transitional() bool { return s == StatusStarting || s == StatusStopping }

// settled says whether st is a state a restarted sidecar must find in
// .pilot/sandbox.json: a container, not in the middle of an operation.
func settled(st *State) bool { return st != nil && !st.Status.transitional() && st.ContainerID != "" }

// State is what a client sees of one project's sandbox (docs/protocol.md,
// SandboxState). Times are milliseconds since the Unix epoch.
type State struct {
	ProjectPath   string `json:"projectPath"`
	ContainerID   string `json:"containerId"`
	ContainerName string `json:"containerName"`
	Image         string `json:"image"`
	// ImageVariant is the kind of image: "desktop", "browser", or
	// "dockerfile" (the project's own, built on the browser image).
	ImageVariant string          `json:"imageVariant,omitempty"`
	Status       Status          `json:"status"`
	WSPort       int             `json:"wsPort"`
	VNCPort      int             `json:"vncPort"`
	ViewerURL    string          `json:"viewerUrl"`
	WatchURL     string          `json:"watchUrl"`
	Display      desktop.Display `json:"display"`
	// Network is "none" for a sandbox without a network, whose desktop
	// addresses are carried by this process (network.go); empty otherwise.
	Network string `json:"network,omitempty"`
	// Carried says the desktop's addresses are this process's relays,
	// which last while it runs: a sandbox without a network, or on an
	// engine on another machine (network.go).
	Carried   bool   `json:"carried,omitempty"`
	CreatedAt int64  `json:"createdAt"`
	StartedAt int64  `json:"startedAt,omitempty"`
	Error     string `json:"error,omitempty"`
	// StopReason says why the lifecycle policy stopped the sandbox
	// ("stopped after 30m without activity"); empty after any other stop.
	StopReason string `json:"stopReason,omitempty"`
	// DiskBytes is what its own files measured last (the container's
	// writable layer), when a disk limit is set; 0 until measured.
	DiskBytes int64 `json:"diskBytes,omitempty"`
	// MemoryBytes is the memory a paused sandbox holds (as docker stats
	// counts it: without the page cache it could give back); 0 while
	// not paused, or not measured.
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
}

// statusOf reads a container's status the way a user would put it. stopping
// says whether the sidecar itself is stopping it, so that a kill at the end of
// the grace period is a stop, not a crash.
func statusOf(c Container, stopping bool) (Status, string) {
	switch {
	case c.Paused():
		// Docker reports a frozen container as running too.
		return StatusPaused, ""
	case c.Running:
		return StatusRunning, ""
	case c.State == "created":
		return StatusStopped, ""
	case c.ExitCode == 0 || c.ExitCode == 143 || stopping:
		// 143: the entrypoint died of SIGTERM, which only a stop sends.
		// Docker's OOMKilled stays set after a process in the sandbox was
		// killed for memory while the desktop lived on: a stop is a stop.
		return StatusStopped, ""
	case c.OOMKilled:
		return StatusError, "the sandbox ran out of memory and was stopped"
	case c.State == "dead" || c.State == "removing":
		return StatusError, fmt.Sprintf("the container is %s", c.State)
	case c.ExitCode == 137:
		return StatusError, "the sandbox was killed from outside (exit code 137)"
	default:
		msg := fmt.Sprintf("the sandbox's desktop exited unexpectedly (exit code %d)", c.ExitCode)
		if c.Error != "" {
			msg += ": " + c.Error
		}
		return StatusError, msg
	}
}

// variantOf says which kind of image a container runs. Containers created
// before LabelVariant existed are told apart by their image's labels.
func variantOf(c Container) string {
	switch {
	case c.Labels[LabelVariant] != "":
		return c.Labels[LabelVariant]
	case c.Labels[images.LabelContext] != "":
		return images.VariantProject
	case c.Labels[images.LabelBrowser] != "":
		return images.VariantBrowser
	}
	return images.VariantDesktop
}

// stateOf builds the client's view of a container.
func stateOf(project string, c Container, secret desktop.Secret, display desktop.Display, stopping bool) State {
	st := State{
		ProjectPath:   project,
		ContainerID:   c.ID,
		ContainerName: c.Name,
		Image:         c.Image,
		ImageVariant:  variantOf(c),
		Display:       display,
		CreatedAt:     millis(c.CreatedAt),
	}
	if c.NoNetwork {
		st.Network = NetworkNone
	}
	st.Status, st.Error = statusOf(c, stopping)
	if st.Status == StatusRunning {
		st.WSPort = c.Ports[desktop.NoVNCPort]
		st.VNCPort = c.Ports[desktop.VNCPort]
		st.StartedAt = millis(c.StartedAt)
		st.ViewerURL, st.WatchURL = desktop.ViewerURLs(st.WSPort, c.Labels[images.LabelViewer], secret)
	}
	return st
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// sameState says whether a change is worth an event. A new measure of
// the disk is not: it is in the next state read or sent.
func sameState(a, b *State) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.DiskBytes, y.DiskBytes = 0, 0
	return x == y
}

// displayOf reads the display size a container was created with, or
// fallback (Config.Display) when it says none.
func displayOf(c Container, fallback desktop.Display) desktop.Display {
	for _, kv := range c.Env {
		v, ok := strings.CutPrefix(kv, desktop.ResolutionEnv+"=")
		if !ok {
			continue
		}
		parts := strings.Split(v, "x")
		if len(parts) < 2 {
			break
		}
		w, err1 := strconv.Atoi(parts[0])
		h, err2 := strconv.Atoi(parts[1])
		if err1 == nil && err2 == nil && w > 0 && h > 0 {
			return desktop.Display{Width: w, Height: h}
		}
	}
	return fallback
}

// Clients hear of a change as it happens: a state as commit makes it, a
// step of a long operation, a warning about a file. Subscribers that fall
// behind lose events rather than stall the manager.

// Stages of a start, as reported in Progress.
const (
	StageImage  = "image"
	StageCreate = "create"
	StageStart  = "start"
	StageReady  = "ready"
)

// Progress is a step of a long operation (docs/protocol.md, sandbox/progress).
type Progress struct {
	ProjectPath string `json:"projectPath"`
	Stage       string `json:"stage"`
	Message     string `json:"message"`
	Current     int    `json:"current,omitempty"`
	Total       int    `json:"total,omitempty"`
}

// EventKind tells the two kinds of Event apart.
type EventKind int

const (
	// EventState: a project's sandbox changed; State is nil when the project
	// has no sandbox any more.
	EventState EventKind = iota
	// EventProgress: a long operation made progress.
	EventProgress
	// EventWarning: a problem with a project's file that a person should
	// hear of (Warning).
	EventWarning
)

// Event is what the manager tells its subscribers.
type Event struct {
	Kind     EventKind
	Project  string
	State    *State
	Progress Progress
	Warning  Warning
}

// subscriberBuffer is how far a subscriber may fall behind before events to it
// are dropped (and logged): a client that stops reading must not stall the
// manager.
const subscriberBuffer = 1024

// broker fans events out to subscribers without blocking the publisher.
type broker struct {
	mu   sync.Mutex // guards subs
	subs map[chan Event]struct{}
}

// subscribe returns a channel of events and the function that ends the
// subscription and closes the channel.
func (b *broker) subscribe() (<-chan Event, func()) {
	ch := make(chan Event, subscriberBuffer)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[chan Event]struct{}{}
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
			close(ch)
		})
	}
}

// publish delivers ev to every subscriber with room for it and reports how
// many it had to skip.
func (b *broker) publish(ev Event) (dropped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
			dropped++
		}
	}
	return dropped
}

// Warning tells a client about a problem it did not ask about but a person
// should know of: a file of the project's found corrupt and set aside at
// startup, or a state file that could not be saved while the sandbox runs
// on (PROTOCOL additions: sandbox/warning).
//
// A warning about the user's own config.json has no project, and one
// about a sandbox's disk use (ProblemDisk) no file.
type Warning struct {
	ProjectPath string                `json:"projectPath,omitempty"`
	File        string                `json:"file,omitempty"`
	Problem     projectfs.FileProblem `json:"problem"`
	KeptAs      string                `json:"keptAs,omitempty"`
	Message     string                `json:"message"`
}

// running returns the project's state if its sandbox is running.
func (m *Manager) running(ctx context.Context, path string) (*box, State, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, State{}, err
	}
	b := m.box(project)
	st := b.snapshot()
	if (st == nil || st.Status != StatusRunning) && m.tryLockProject(b) {
		// Not known to be running: ask Docker rather than trust memory.
		st, err = m.refresh(ctx, b)
		m.unlockProject(b)
		if err != nil {
			return b, State{}, err
		}
	}
	if st == nil || st.Status != StatusRunning {
		return b, State{}, notRunning(st, nil)
	}
	m.touch(b) // every exec and desktop call comes through here
	return b, *st, nil
}

// commandTarget is running for a command, which needs the container
// running with its network enforced, not the desktop's readiness: a
// sandbox not known running here (a new process, the CLI's) is this
// project's container inspected, without the desktop's probe and the
// read of its password, which took 0.3 to 0.5 s of each CLI exec and,
// under load, failed a command on a running sandbox with "not running
// (it is starting)" (issue 26; docs/performance.md, The CLI's exec).
// The network's rules must be in place (commandNetwork).
func (m *Manager) commandTarget(ctx context.Context, path string) (*box, State, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, State{}, err
	}
	b := m.box(project)
	if st := b.snapshot(); (st != nil && st.Status == StatusRunning) || !m.tryLockProject(b) {
		// Known running, or an operation under way whose state says.
		return m.running(ctx, path)
	}
	defer m.unlockProject(b)
	c, err := m.find(ctx, b)
	if err != nil && !errors.Is(err, ErrContainerNotFound) {
		return b, State{}, err
	}
	if err != nil || !c.Running || c.State == "paused" || m.stoppingOutside(b, c) {
		st, err := m.refreshWith(ctx, b, c, err) // forgets it, or says what it is
		return b, State{}, notRunning(st, err)
	}
	if err := m.commandNetwork(ctx, project, c); err != nil {
		return b, State{}, fmt.Errorf("%w: %v", ErrNotRunning, err)
	}
	st := m.stateOf(project, c, desktop.Secret{}, displayOf(c, m.cfg.Display), false)
	b.runOf(c)
	m.touch(b)
	return b, st, nil
}

// commandNetwork is networkUp for a command (commandTarget): a run whose
// rules a process of the user loaded (a mark in the user's state) and
// whose proxy a process carries needs no helper launched to prove it
// again, which was half of each CLI exec's time (about 205 ms; docs/
// performance.md, The CLI's exec). Otherwise the helper runs as for a
// start: the rules go in, and this process carries the proxy if none
// does.
func (m *Manager) commandNetwork(ctx context.Context, project string, c Container) error {
	if m.cfg.Network == nil || c.NoNetwork {
		return nil
	}
	if m.marks.Carried(ctx, m.cfg.Network, c.ID, c.StartedAt) {
		return nil
	}
	return <-m.networkUp(ctx, project, c)
}

// notRunning is the error of a command on a sandbox in state st.
func notRunning(st *State, err error) error {
	switch {
	case err != nil:
		return err
	case st == nil:
		return ErrNoSandbox
	case st.Status == StatusPaused:
		return ErrPaused
	}
	return fmt.Errorf("%w (it is %s)", ErrNotRunning, st.Status)
}
