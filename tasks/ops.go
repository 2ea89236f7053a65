package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// cancelWait bounds how long Cancel waits for the task to end: the
// runner's grace between SIGTERM and SIGKILL (5 s) and the saving of its
// change.
const cancelWait = 60 * time.Second

// Sync makes the project's /workspace match the project (workspace.Sync),
// unless a task runs there: its files would change under it.
func (m *Manager) Sync(ctx context.Context, projectPath string, report func(workspace.Progress)) (workspace.Synced, error) {
	project, err := projectfs.Canonical(projectPath)
	if err != nil {
		return workspace.Synced{}, err
	}
	sb, err := m.sandboxes.Running(ctx, project)
	if err != nil {
		return workspace.Synced{}, err
	}
	unlock := m.lock(sb.ContainerID())
	defer unlock()
	if err := m.idle(ctx, sb, "a sync would change the files under it"); err != nil {
		return workspace.Synced{}, err
	}
	return m.workspace(sb, project).Sync(ctx, report)
}

// idle fails with ErrBusy while a task runs in the sandbox. The records
// say first: tasks are recorded before they start, so a container no
// record says runs a task runs none, and the sandbox is asked only when
// one does (it may have ended without a sidecar to record it).
func (m *Manager) idle(ctx context.Context, sb workspace.Sandbox, why string) error {
	if !m.recordedRunning(sb.ContainerID()) {
		return nil
	}
	running, err := m.runningIn(ctx, sb)
	if err != nil {
		return err
	}
	if len(running) > 0 {
		return fmt.Errorf("%w: task %s runs there, and %s", ErrBusy, running[0], why)
	}
	return nil
}

// recordedRunning says a record says a task runs in the container.
func (m *Manager) recordedRunning(container string) bool {
	for _, rec := range m.records.all() {
		if rec.Container == container && m.current(rec).Status == StatusRunning {
			return true
		}
	}
	return false
}

// List is the project's tasks, newest first.
func (m *Manager) List(projectPath string) ([]Record, error) {
	project, err := projectfs.Canonical(projectPath)
	if err != nil {
		return nil, err
	}
	out := []Record{}
	for _, rec := range m.records.all() {
		if rec.ProjectPath == project {
			out = append(out, m.current(rec))
		}
	}
	return out, nil
}

// current is the freshest record of a task: this process's, if it follows
// it.
func (m *Manager) current(rec Record) Record {
	if t := m.followed(rec.ID); t != nil {
		return t.record()
	}
	return rec
}

func (m *Manager) followed(id string) *task {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tasks[id]
}

// Got is a task with its events so far: Events[0] is event number
// Dropped+1 (the older ones were let go).
type Got struct {
	Task    Record  `json:"task"`
	Events  []Event `json:"events"`
	Dropped int     `json:"droppedEvents"`
}

// Get is a task and its events so far. A task this process does not
// follow has its events read again from its sandbox once it ended (none
// while another sidecar follows it).
func (m *Manager) Get(ctx context.Context, id string) (Got, error) {
	if t := m.followed(id); t != nil {
		rec, evs, dropped := t.snapshot()
		return Got{Task: rec, Events: evs, Dropped: dropped}, nil
	}
	rec, err := m.records.load(id)
	if err != nil {
		return Got{}, err
	}
	got := Got{Task: rec, Events: []Event{}}
	sb := m.liveSandbox(ctx, rec)
	if rec.Status == StatusRunning || sb == nil {
		return got, nil
	}
	t := newTask(rec)
	t.notified = 1 << 62 // read again, not sent again
	rctx, cancel := context.WithTimeout(ctx, runnerTimeout)
	defer cancel()
	m.readAgain(rctx, t, sb)
	_, got.Events, got.Dropped = t.snapshot()
	return got, nil
}

// readAgain reads an ended task's records from its sandbox into t.
func (m *Manager) readAgain(ctx context.Context, t *task, sb workspace.Sandbox) {
	rec := t.record()
	if _, fin, _ := m.stream(ctx, t, sb, m.runnerArgv("follow", rec.ID, "0"), taskEnv(rec.ID), nil); fin != nil && rec.Finished != nil {
		m.emit(t, Event{Type: TypeFinished, TimeMs: rec.Finished.DurationMs, Body: rec.Finished})
	}
}

// Cancel ends a running task (every process it started) and returns its
// record once it ended; a task that ended is returned as it is.
func (m *Manager) Cancel(ctx context.Context, id string) (Record, error) {
	rec, err := m.record(id)
	if err != nil || rec.Status != StatusRunning {
		return rec, err
	}
	sb := m.liveSandbox(ctx, rec)
	if sb == nil {
		return rec, fmt.Errorf("task %s: %w", id, ErrSandboxGone)
	}
	res, err := sb.Exec(ctx, workspace.Command{Argv: m.runnerArgv("cancel", id), Env: taskEnv(id), MaxOutput: maxStderr, Timeout: runnerTimeout})
	switch {
	case err != nil:
		return rec, err
	case res.ExitCode != 0 && res.ExitCode != exitNotRunning:
		return rec, fmt.Errorf("cancel task %s: %s", id, stderrText(res))
	}
	if t := m.followed(id); t != nil {
		select {
		case <-t.done:
		case <-ctx.Done():
			return t.record(), ctx.Err()
		case <-time.After(cancelWait):
		}
		return t.record(), nil
	}
	return m.records.load(id) // another sidecar follows it and records its end
}

// record is a task's freshest record.
func (m *Manager) record(id string) (Record, error) {
	if t := m.followed(id); t != nil {
		return t.record(), nil
	}
	return m.records.load(id)
}

// change is the sandbox and the commit of an ended task's change. A task
// that ended without its change saved (its container stopped first, then
// started again) has it saved now: the working tree is as it left it
// unless a sync or another task came since.
func (m *Manager) change(ctx context.Context, id string) (workspace.Sandbox, Record, string, error) {
	rec, err := m.record(id)
	if err != nil {
		return nil, rec, "", err
	}
	if rec.Status == StatusRunning {
		return nil, rec, "", fmt.Errorf("%w: task %s is %s", ErrNotFinished, id, rec.Status)
	}
	sb := m.liveSandbox(ctx, rec)
	if sb == nil {
		return nil, rec, "", fmt.Errorf("task %s: %w", id, ErrSandboxGone)
	}
	if rec.Finished != nil && rec.Finished.Commit != "" {
		return sb, rec, rec.Finished.Commit, nil
	}
	commit, err := m.saveChange(sb, rec)
	if err != nil {
		return nil, rec, "", fmt.Errorf("save task %s's change: %w", id, err)
	}
	if rec.Finished != nil {
		rec.Finished.Commit = commit
		m.records.save(rec)
	}
	return sb, rec, commit, nil
}

// Diff is an ended task's change against the base it started from.
func (m *Manager) Diff(ctx context.Context, id string) (workspace.Diff, error) {
	sb, rec, commit, err := m.change(ctx, id)
	if err != nil {
		return workspace.Diff{}, err
	}
	return m.workspace(sb, rec.ProjectPath).Diff(ctx, rec.Base, commit)
}

// Apply writes an ended task's change into the host project (all of it,
// or the paths named): workspace.Apply.
func (m *Manager) Apply(ctx context.Context, id string, paths []string) ([]string, error) {
	if rec, err := m.record(id); err == nil && projectfs.Gone(rec.ProjectPath) {
		return nil, fmt.Errorf("%s: %w", rec.ProjectPath, ErrProjectGone)
	}
	sb, rec, commit, err := m.change(ctx, id)
	if err != nil {
		return nil, err
	}
	return m.workspace(sb, rec.ProjectPath).Apply(ctx, rec.Base, commit, paths)
}

// Discard drops an ended task's change and puts the workspace back to its
// base, unless a task runs there.
func (m *Manager) Discard(ctx context.Context, id string) error {
	rec, err := m.record(id)
	if err != nil {
		return err
	}
	if rec.Status == StatusRunning {
		return fmt.Errorf("%w: task %s runs; cancel it first", ErrNotFinished, id)
	}
	sb := m.liveSandbox(ctx, rec)
	if sb == nil {
		return fmt.Errorf("task %s: %w", id, ErrSandboxGone)
	}
	unlock := m.lock(sb.ContainerID())
	defer unlock()
	if err := m.idle(ctx, sb, "a discard would change the files under it"); err != nil {
		return err
	}
	return m.workspace(sb, rec.ProjectPath).Discard(ctx, id)
}

// Reattach follows the tasks an earlier sidecar left running: each goes on
// if its container still runs, and is recorded lost otherwise.
func (m *Manager) Reattach(ctx context.Context) {
	for _, rec := range m.records.all() {
		if rec.Status != StatusRunning || m.followed(rec.ID) != nil {
			continue
		}
		t := newTask(rec)
		m.mu.Lock()
		m.tasks[rec.ID] = t
		m.mu.Unlock()
		sb := m.liveSandbox(ctx, rec)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			if sb == nil {
				m.finish(t, Finished{Status: StatusLost, ExitCode: -1, Error: "the sandbox stopped while the task ran"})
				return
			}
			m.reopenModels(m.ctx, t)
			m.follow(t, sb, nil)
		}()
	}
}
