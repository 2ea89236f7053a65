package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/readiness"
)

// Status returns the project's sandbox as Docker has it now, or nil when the
// project has none. While an operation runs on the project, it returns that
// operation's state (starting, stopping) without waiting for it.
func (m *Manager) Status(ctx context.Context, path string) (*State, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, err
	}
	b := m.box(project)
	if !m.tryLockProject(b) {
		return b.snapshot(), nil
	}
	defer m.unlockProject(b)
	return m.refresh(ctx, b)
}

// List returns every sandbox on the engine, sorted by project path.
func (m *Manager) List(ctx context.Context) ([]State, error) {
	if err := m.resync(ctx); err != nil {
		return nil, err
	}
	var out []State
	for _, b := range m.allBoxes() {
		if st := b.snapshot(); st != nil {
			out = append(out, *st)
		}
	}
	return out, nil
}

// refresh reads the project's container from Docker and makes the state
// follow it. The project's lock must be held.
func (m *Manager) refresh(ctx context.Context, b *box) (*State, error) {
	c, err := m.find(ctx, b)
	return m.refreshWith(ctx, b, c, err)
}

// refreshWith is refresh with the container found (or not) already.
func (m *Manager) refreshWith(ctx context.Context, b *box, c Container, err error) (*State, error) {
	if errors.Is(err, ErrContainerNotFound) {
		if b.snapshot() != nil {
			m.log.Info().Str("project", b.project).Msg("the sandbox container is gone")
		}
		m.forget(b)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return m.observe(ctx, b, c), nil
}

// observe makes the project's state follow a container just read from Docker.
// The project's lock must be held.
func (m *Manager) observe(ctx context.Context, b *box, c Container) *State {
	var secret desktop.Secret
	ready := true
	stopping := m.stoppingOutside(b, c)
	if c.Running && c.State != "paused" && !stopping {
		c, _ = m.withDesktopPorts(ctx, b.project, c) // without them it is not ready
		var err error
		if secret, err = m.secretFor(ctx, b, c); err != nil {
			m.log.Warn().Err(err).Str("project", b.project).Msg("VNC password unknown")
		}
		ready = m.readiness(ctx, b, c)
	}
	st := m.stateOf(b.project, c, secret, displayOf(c, m.cfg.Display), false)
	b.mu.Lock()
	switch {
	case stopping:
		st.Status = StatusStopping
	case !c.Running && b.failed.id == c.ID:
		st.Status, st.Error = StatusError, b.failed.why
	case !ready:
		// Started outside the sidecar, or found running: not usable yet.
		st.Status, st.WSPort, st.VNCPort, st.ViewerURL, st.WatchURL, st.StartedAt = StatusStarting, 0, 0, "", "", 0
		if r := b.run; r != nil && r.unreadyWhy != "" {
			st.Status, st.Error = StatusError, r.unreadyWhy+": restart the sandbox"
		}
	}
	b.mu.Unlock()
	m.notePause(ctx, b, c, &st)
	if st.Status == StatusStopped {
		st.StopReason = b.stopReasonOf(c)
	} else if c.Running {
		b.stopReasonOf(c) // forgets the reason of an earlier stop
	}
	m.commit(b, &st)
	return &st
}

// resync makes every sandbox's state follow Docker: the containers with the
// sandbox label, and the projects the manager or the registry know whose
// container may be gone. Projects with an operation under way are skipped;
// the operation settles their state itself.
func (m *Manager) resync(ctx context.Context) error {
	containers, err := m.docker.ListContainers(ctx, scopeLabels(m.cfg.Scope))
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range containers {
		project, ok := m.projectOf(c)
		if !ok {
			continue // another user's, or a copy made by hand
		}
		seen[project] = true
		b := m.box(project)
		if m.tryLockProject(b) {
			m.resyncOne(ctx, b)
			m.unlockProject(b)
		}
	}
	for _, project := range m.registry.List() {
		m.box(project) // so the loop below checks it
	}
	for _, b := range m.allBoxes() {
		if seen[b.project] || !m.tryLockProject(b) {
			continue
		}
		if b.snapshot() != nil || projectfs.RecordExists(b.project) {
			if _, err := m.refreshBounded(ctx, b); err != nil {
				m.log.Debug().Err(err).Str("project", b.project).Msg("refresh failed")
			}
		}
		m.unlockProject(b)
	}
	return nil
}

// resyncOne makes a listed project's state follow its container, read
// again now that the project's lock is held: the list may be seconds old
// (each sandbox before it was probed), and another process may have
// stopped and restarted the container meanwhile. Its state from the list
// (stopped, or killed at the end of a slow stop) written over the restart's
// running one would stay in .pilot/sandbox.json.
func (m *Manager) resyncOne(ctx context.Context, b *box) {
	if _, err := m.refreshBounded(ctx, b); err != nil {
		m.log.Debug().Err(err).Str("project", b.project).Msg("refresh failed")
		return
	}
	m.ensureRecord(b)
}

// refreshBounded is refresh with its inspect bounded by InspectTimeout,
// for the resync's walk over every sandbox. A container wedged in the
// engine (a pause that landed on an exec starting, docs/sandbox.md,
// Pause) leaves every inspect of it hanging: the walk notes that sandbox
// as failing, with why, and goes on to the others.
func (m *Manager) refreshBounded(ctx context.Context, b *box) (*State, error) {
	inspect, cancel := context.WithTimeout(ctx, m.cfg.InspectTimeout)
	c, err := m.find(inspect, b)
	cancel()
	if err != nil && ctx.Err() == nil && errors.Is(inspect.Err(), context.DeadlineExceeded) {
		m.unanswered(b, err)
		return nil, err
	}
	return m.refreshWith(ctx, b, c, err)
}

// unanswered marks the sandbox as failing: Docker did not say what its
// container is within InspectTimeout. The next resync asks again.
func (m *Manager) unanswered(b *box, err error) {
	why := fmt.Sprintf("Docker did not answer about the sandbox's container within %s; "+
		"a container paused while a command started in it can stay wedged (docs/sandbox.md, Pause)",
		m.cfg.InspectTimeout)
	m.log.Warn().Err(err).Str("project", b.project).Msg(why)
	if st := b.snapshot(); st != nil && (st.Status != StatusError || st.Error != why) {
		failed := *st
		failed.Status, failed.Error = StatusError, why
		m.commit(b, &failed)
	}
}

// followEvents refreshes a project whenever Docker reports a change to its
// container. When the stream breaks (Docker restarted, or went away), it
// reconnects with backoff and resyncs, since events were missed meanwhile.
func (m *Manager) followEvents(ctx context.Context) {
	const maxBackoff = 5 * time.Second
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		events, err := m.docker.Events(ctx, scopeLabels(m.cfg.Scope))
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = 250 * time.Millisecond
		if err := m.resync(ctx); err != nil {
			m.log.Debug().Err(err).Msg("resync after reconnecting to Docker failed")
		}
		m.handleEvents(ctx, events)
	}
}

// handleEvents refreshes projects as their events come, until the stream
// ends or ctx does.
func (m *Manager) handleEvents(ctx context.Context, events <-chan ContainerEvent) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			m.onEvent(ctx, ev)
		}
	}
}

func (m *Manager) onEvent(ctx context.Context, ev ContainerEvent) {
	project := ev.Labels[LabelProject]
	if owner := ev.Labels[LabelOwner]; project == "" || (owner != "" && owner != m.cfg.Owner) {
		return // not a sandbox, or another user's
	}
	b := m.box(project)
	if ev.Action == "kill" && ev.Labels["signal"] == sigterm {
		// A stop from outside: the desktop takes up to 3 s to end, and
		// meanwhile the sandbox is stopping, not running (a viewer that
		// lost it must not connect again).
		b.mu.Lock()
		b.term.id, b.term.at = ev.ContainerID, ev.Time
		b.mu.Unlock()
	}
	if !m.tryLockProject(b) {
		return
	}
	defer m.unlockProject(b)
	if _, err := m.refresh(ctx, b); err != nil {
		m.log.Debug().Err(err).Str("project", project).Str("action", ev.Action).Msg("refresh after event failed")
	}
}

// A running container is a running sandbox only once its desktop answers
// (docs/protocol.md, Containers: readiness): a start waits for it; a run
// started outside this process, or found, is "starting" until a probe
// answers, Run waiting for it in the background meanwhile (unready).
// What proves a run ready, and the waits, are package readiness's; what a
// ready run or one never ready is, is decided here.

// markReady records that c's run answered, for this process and, in the
// user's state, for the user's others (readiness.Marks).
func (m *Manager) markReady(b *box, c Container) {
	if b.isReady(c) {
		return
	}
	b.markReady(c)
	if err := m.marks.MarkAnswered(c.ID, c.StartedAt); err != nil {
		m.log.Debug().Err(err).Msg("could not record the desktop's readiness for other processes")
	}
}

// readiness says whether a running container's desktop is ready, asking
// Run to wait for it if not (one never ready has its reason in its run).
func (m *Manager) readiness(ctx context.Context, b *box, c Container) (ready bool) {
	if b.isReady(c) {
		return true
	}
	if m.marks.Proved(ctx, m.carrier(c), c.ID, c.StartedAt) {
		// This process's own hold on the network (to take the proxy over
		// should its carrier end) is Run's, in the background; a
		// command's process (the CLI's status) has no Run and needs none.
		b.markReady(c)
		m.unready.Ask(b.project)
		return true
	}
	// A run another process saw answer needs no probe of this one's (under
	// load, slower than ProbeTimeout); its network still needs a hold.
	answered := m.marks.Answered(c.ID, c.StartedAt)
	if ws := c.Ports[desktop.NoVNCPort]; !answered && ws != 0 {
		probeCtx, cancel := context.WithTimeout(ctx, desktop.ProbeTimeout)
		answered = m.probe(probeCtx, b, c, ws, desktop.Secret{}) == nil
		cancel()
	}
	if answered && m.networkFound(ctx, b, c) {
		m.markReady(b, c)
		return true
	}
	m.unready.Ask(b.project)
	return false
}

// carrier is what says whether c's proxy is carried, nil for a run whose
// network is not enforced (none, or no Network).
func (m *Manager) carrier(c Container) readiness.Carrier {
	if m.cfg.Network == nil || c.NoNetwork {
		return nil
	}
	return m.cfg.Network
}

// probe checks the container's desktop on its noVNC port ws, proving with
// its control password (from s, or else read from the container) that the
// VNC server behind the viewer is its own.
func (m *Manager) probe(ctx context.Context, b *box, c Container, ws int, s desktop.Secret) error {
	if s == (desktop.Secret{}) {
		var err error
		if s, err = m.secretFor(ctx, b, c); err != nil {
			return err
		}
	}
	return m.cfg.Probe(ctx, ws, c.Labels[images.LabelViewer], s.Control)
}

// awaitReady waits, in Run (unready), for the project's running container
// to answer, then refreshes the project so that its state says so. If an
// operation holds the project meanwhile, it settles the state itself.
func (m *Manager) awaitReady(ctx context.Context, project string) {
	b := m.box(project)
	c, err := m.find(ctx, b)
	if err != nil || !c.Running {
		return
	}
	if b.isReady(c) { // proved elsewhere: only this process's hold is left
		m.networkFound(ctx, b, c)
		return
	}
	ready, err := m.waitReady(ctx, b, c.ID, desktop.Secret{}, nil)
	if err == nil && !m.networkFound(ctx, b, c) {
		return
	}
	switch {
	case err == nil:
		m.markReady(b, ready)
	case ctx.Err() != nil:
		return
	case errors.Is(err, readiness.ErrNotAnswering), errors.Is(err, desktop.ErrViewerMismatch), errors.Is(err, desktop.ErrNotOurVNCServer):
		r := b.runOf(c)
		b.mu.Lock()
		r.unreadyWhy = err.Error()
		b.mu.Unlock()
	}
	if m.tryLockProject(b) {
		defer m.unlockProject(b)
		if _, err := m.refresh(ctx, b); err != nil {
			m.log.Debug().Err(err).Str("project", b.project).Msg("refresh after waiting for the desktop")
		}
	}
}

// runGoesOn says whether the container still runs the run key names, as
// the engine says now.
func (m *Manager) runGoesOn(ctx context.Context, key runKey) (bool, error) {
	c, err := m.docker.InspectContainer(ctx, key.id)
	return err == nil && c.Running && keyOf(c) == key, err
}
