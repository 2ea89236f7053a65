package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Stop stops the project's sandbox and keeps its container, so the next
// start finds the desktop's files as they were. Stopping a stopped sandbox
// returns its state.
func (m *Manager) Stop(ctx context.Context, path string) (State, error) {
	b, err := m.lockProject(ctx, path)
	if err != nil {
		return State{}, err
	}
	defer m.unlockProject(b)
	b.setStopReason("", "") // asked for: not the policy's stop
	return m.stop(ctx, b)
}

func (m *Manager) stop(ctx context.Context, b *box) (State, error) {
	c, err := m.find(ctx, b)
	if errors.Is(err, ErrContainerNotFound) {
		m.forget(b)
		return State{}, ErrNoSandbox
	}
	if err != nil {
		return State{}, err
	}
	display := displayOf(c, m.cfg.Display)
	if c.Paused() {
		// A frozen desktop cannot take its SIGTERM: docker stop would wait
		// the whole grace period and kill it.
		if err := m.docker.UnpauseContainer(ctx, c.ID); err != nil {
			return State{}, fmt.Errorf("resume the paused container to stop it: %w", err)
		}
		b.mu.Lock()
		b.paused = pauseMark{}
		b.mu.Unlock()
	}
	if c.Running {
		stopping := m.stateOf(b.project, c, desktop.Secret{}, display, true)
		stopping.Status = StatusStopping
		m.commit(b, &stopping)
		if err := m.docker.StopContainer(ctx, c.ID, m.cfg.StopGrace); err != nil {
			m.settle(ctx, b)
			return State{}, fmt.Errorf("stop container: %w", err)
		}
		if c, err = m.docker.InspectContainer(ctx, c.ID); err != nil {
			m.settle(ctx, b)
			return State{}, err
		}
	}
	st := m.stateOf(b.project, c, desktop.Secret{}, display, true)
	if !c.Running {
		// Asked to stop, it is stopped, whatever it died of before.
		st.Status, st.Error = StatusStopped, ""
		st.StopReason = b.stopReasonOf(c)
		b.clearFailure()
	}
	m.commit(b, &st)
	m.log.Info().Str("project", b.project).Str("container", c.ID).Msg("sandbox stopped")
	return st, nil
}

// Close is what project/close does: the sandbox is stopped and kept. It
// returns nil when the project has no sandbox.
func (m *Manager) Close(ctx context.Context, path string) (*State, error) {
	return closed(m.Stop(ctx, path))
}

// CloseProject is what the app's close of a project does (sandbox/close):
// what config.json's closeAction says, pausing the sandbox by default so
// that the project opens again to its windows as they were. A sandbox
// that does not run is left as it is. It returns nil when the project has
// no sandbox.
func (m *Manager) CloseProject(ctx context.Context, path string) (*State, error) {
	if cfg, _ := m.currentPolicy(); cfg.CloseAction == projectfs.CloseStop {
		return m.Close(ctx, path)
	}
	st, err := m.Pause(ctx, path)
	if errors.Is(err, ErrNotRunning) && !errors.Is(err, ErrNoSandbox) {
		// Stopped, or stopping: nothing to freeze.
		return m.Status(ctx, path)
	}
	return closed(st, err)
}

func closed(st State, err error) (*State, error) {
	if errors.Is(err, ErrNoSandbox) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// Remove deletes the project's container, with everything in it, and its
// .pilot/sandbox.json. It reports whether there was a container to delete.
// The project's directory may be gone (projectfs.CanonicalOrGone).
func (m *Manager) Remove(ctx context.Context, path string) (bool, error) {
	project, err := projectfs.CanonicalOrGone(path)
	if err != nil {
		return false, err
	}
	b, err := m.lockBox(ctx, project)
	if err != nil {
		return false, err
	}
	defer m.unlockProject(b)
	return m.remove(ctx, b)
}

// remove deletes the project's container; the project's lock is held.
func (m *Manager) remove(ctx context.Context, b *box) (bool, error) {
	c, err := m.find(ctx, b)
	switch {
	case errors.Is(err, ErrContainerNotFound):
		m.forget(b)
		return false, nil
	case err != nil:
		return false, err
	}
	if err := m.docker.RemoveContainer(ctx, c.ID); err != nil && !errors.Is(err, ErrContainerNotFound) {
		m.settle(ctx, b)
		return false, fmt.Errorf("remove container: %w", err)
	}
	m.forget(b)
	m.removeProjectImage(ctx, b.project, c.Image)
	m.log.Info().Str("project", b.project).Str("container", c.ID).Msg("sandbox removed")
	return true, nil
}

// removeProjectImage deletes the project's own image, if it has one, with
// its sandbox: nothing else uses it. The agent CLIs' layer on it, the
// container's image then, carries its labels and goes first.
func (m *Manager) removeProjectImage(ctx context.Context, project, image string) {
	own := m.ownImage(project)
	for _, tag := range []string{image, own.Tag} {
		p := own
		p.Tag = tag
		removed, err := m.images.RemoveProject(ctx, p)
		switch {
		case err != nil:
			m.log.Warn().Err(err).Str("image", p.Tag).Msg("could not remove the project's image")
		case removed:
			m.log.Info().Str("project", project).Str("image", p.Tag).Msg("removed the project's image")
		}
	}
}

// forget drops what the sidecar and the project remember of a sandbox whose
// container is gone.
func (m *Manager) forget(b *box) {
	b.clearFailure()
	m.policy.activity.Forget(b.project)
	if id := b.endRun(); id != "" {
		m.marks.Forget(id)
	}
	// commit removes the state file only when the state changes; the file
	// may exist while the manager never loaded the project.
	if m.mayWrite(b) {
		m.warn(b, projectfs.SandboxFile(b.project), projectfs.RemoveRecord(b.project))
		if err := m.registry.Remove(b.project); err != nil {
			m.log.Warn().Err(err).Msg("could not update the project registry")
		}
	}
	m.commit(b, nil)
}

func (b *box) clearFailure() {
	b.mu.Lock()
	b.failed.id, b.failed.why = "", ""
	b.mu.Unlock()
}

// settle replaces a transitional state left by a failed operation with what
// Docker says now. If Docker cannot say, the last settled state stays.
func (m *Manager) settle(ctx context.Context, b *box) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := m.refresh(ctx, b); err != nil {
		m.log.Debug().Err(err).Str("project", b.project).Msg("could not refresh after a failed operation")
		if st := b.snapshot(); st != nil && st.Status.transitional() {
			failed := *st
			failed.Status, failed.Error = StatusError, err.Error()
			m.commit(b, &failed)
		}
	}
}

// recheck makes the project's state follow Docker after a request found
// its sandbox gone. It takes the project's lock, as settle's callers hold
// it; when an operation holds the project, that one settles the state.
func (m *Manager) recheck(ctx context.Context, b *box) {
	if !m.tryLockProject(b) {
		return
	}
	defer m.unlockProject(b)
	m.settle(ctx, b)
}

// A sandbox outlives its project's directory when the directory is
// deleted or moved: an orphan, which only a remove by its project's old
// path (Remove) or by its container (RemoveContainer) can delete short of
// docker rm.

// Orphans lists the sandboxes whose project directory is gone.
func (m *Manager) Orphans(ctx context.Context) ([]State, error) {
	all, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []State
	for _, st := range all {
		if projectfs.Gone(st.ProjectPath) {
			out = append(out, st)
		}
	}
	return out, nil
}

// RemoveContainer deletes a sandbox named by its container's ID (or name),
// whatever became of its project: its project's state goes with it, as
// with Remove. It reports whether there was a container to delete; one
// that is not a sandbox of this manager's scope is refused (an
// ArgumentError on containerId).
func (m *Manager) RemoveContainer(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, &ArgumentError{Name: "containerId", Reason: "must not be empty"}
	}
	c, err := m.docker.InspectContainer(ctx, id)
	switch {
	case errors.Is(err, ErrContainerNotFound):
		return false, nil
	case err != nil:
		return false, err
	case c.Labels[LabelSandbox] != m.cfg.Scope:
		return false, &ArgumentError{Name: "containerId", Reason: fmt.Sprintf("%s is not a pilot-sandbox sandbox (no %s=%s label)", id, LabelSandbox, m.cfg.Scope)}
	}
	if owner := c.Labels[LabelOwner]; owner != "" && owner != m.cfg.Owner {
		return false, &ArgumentError{Name: "containerId", Reason: fmt.Sprintf("%s is a sandbox of %s: pilot-sandbox removes only its own user's (docker rm removes any)", id, owner)}
	}
	project, ok := m.projectOf(c)
	if !ok {
		// A copy made by hand: no project's state is its.
		if err := m.docker.RemoveContainer(ctx, c.ID); err != nil && !errors.Is(err, ErrContainerNotFound) {
			return false, fmt.Errorf("remove container: %w", err)
		}
		m.log.Info().Str("container", c.ID).Msg("removed a sandbox container that belongs to no project")
		return true, nil
	}
	b, err := m.lockBox(ctx, project)
	if err != nil {
		return false, err
	}
	defer m.unlockProject(b)
	return m.remove(ctx, b)
}

// A paused sandbox is frozen whole (docker pause, the cgroup freezer):
// its processes, windows and memory are kept, and a start thaws it
// (resume, below; Start calls it) in tens of milliseconds instead of a
// new desktop in half a second. What a freeze cannot keep is in docs/sandbox.md,
// Pause: connections to the outside may time out, clocks jump on resume.
// Docker does not say when a container was paused, so the box keeps it:
// the pause made here, or the first look at a container found paused
// (at startup, or paused outside the sidecar), from which idleStop
// counts.

// pauseMark is what the box knows of its container's current pause.
// Guarded by the box's mu.
type pauseMark struct {
	run    runKey    // the run of the container it is of; zero while none is paused
	at     time.Time // when it was paused, or first seen paused
	memory int64     // what it holds, measured once: a frozen sandbox's memory does not change
}

// Pause freezes the project's running sandbox, keeping every process,
// window and byte of memory, and returns its state, paused. Pausing a
// paused sandbox returns its state; one that does not run is an
// ErrNotRunning.
func (m *Manager) Pause(ctx context.Context, path string) (State, error) {
	b, err := m.lockProject(ctx, path)
	if err != nil {
		return State{}, err
	}
	defer m.unlockProject(b)
	c, err := m.find(ctx, b)
	switch {
	case errors.Is(err, ErrContainerNotFound):
		m.forget(b)
		return State{}, ErrNoSandbox
	case err != nil:
		return State{}, err
	case !c.Running:
		m.observe(ctx, b, c)
		return State{}, fmt.Errorf("%w: only a running sandbox can be paused; it is stopped", ErrNotRunning)
	}
	if !c.Paused() {
		if err := m.docker.PauseContainer(ctx, c.ID); err != nil {
			m.settle(ctx, b)
			return State{}, fmt.Errorf("pause container: %w", err)
		}
		b.mu.Lock()
		b.paused = pauseMark{run: keyOf(c), at: m.cfg.Now()}
		b.mu.Unlock()
		if c, err = m.docker.InspectContainer(ctx, c.ID); err != nil {
			m.settle(ctx, b)
			return State{}, err
		}
		m.log.Info().Str("project", b.project).Str("container", c.ID).Msg("sandbox paused")
	}
	return *m.observe(ctx, b, c), nil
}

// resume thaws a paused sandbox (stop.go, Pause) and returns once its
// desktop answers again, with every window as it was.
func (m *Manager) resume(ctx context.Context, b *box, c Container, trace *startTrace) (State, error) {
	if err := m.docker.UnpauseContainer(ctx, c.ID); err != nil {
		m.settle(ctx, b)
		return State{}, fmt.Errorf("resume the paused container: %w", err)
	}
	trace.step("unpause")
	b.mu.Lock()
	b.paused = pauseMark{}
	b.mu.Unlock()
	c.State = "running"
	// Straight from paused to running, with no starting between: what
	// follows the sandbox's runs (its relays, the panel's viewer) keeps
	// what it holds through a resume.
	return m.awaitDesktop(ctx, b, c, desktop.Secret{}, trace)
}

// notePause keeps the box's pauseMark in step with the container, and
// puts what a paused one holds into its state.
func (m *Manager) notePause(ctx context.Context, b *box, c Container, st *State) {
	b.mu.Lock()
	if !c.Paused() {
		b.paused = pauseMark{}
		b.mu.Unlock()
		return
	}
	if b.paused.run != keyOf(c) {
		b.paused = pauseMark{run: keyOf(c), at: m.cfg.Now()}
	}
	memory := b.paused.memory
	b.mu.Unlock()
	if memory == 0 {
		var err error
		if memory, err = m.docker.MemoryUsage(ctx, c.ID); err != nil {
			m.log.Debug().Err(err).Str("project", b.project).Msg("could not measure a paused sandbox's memory")
			return
		}
		b.mu.Lock()
		if b.paused.run == keyOf(c) {
			b.paused.memory = memory
		}
		b.mu.Unlock()
	}
	st.MemoryBytes = memory
}

// checkPaused stops a sandbox that has been paused for idle: a frozen
// desktop holds its memory for no one.
func (m *Manager) checkPaused(ctx context.Context, b *box, st State, idle time.Duration) {
	b.mu.Lock()
	mark := b.paused
	b.mu.Unlock()
	if mark.run.id != st.ContainerID || m.cfg.Now().Sub(mark.at) < idle {
		return
	}
	why := "stopped after " + projectfs.FormatDuration(idle) + " paused"
	m.policyStop(ctx, b, st.ContainerID, why, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.paused == mark // not resumed meanwhile
	})
}
