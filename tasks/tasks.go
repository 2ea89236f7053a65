// Package tasks runs a coding agent (Claude Code, Codex) or a command in a
// project's sandbox, on its /workspace, and follows it (docs/tasks.md).
//
// It owns: the tasks' requests and their checks, the runner it starts in
// the sandbox (resources/tasks/runner.py) and the records that runner
// writes, the parsing of an agent's output into events (Claude Code's
// stream-json, Codex's exec --json, raw lines), cancel and timeout, one
// task at a time per sandbox (or the user's maxTasks), the tasks' records
// in the user's state, and reattaching to the tasks a sidecar finds
// running when it starts (or reporting them lost, never forgetting them).
// When a task ends, its change is saved as a commit (workspace.SaveTask),
// whatever its status, before its finished event goes out.
//
// It knows nothing of JSON-RPC, Docker or service: its caller gives it the
// running sandbox of a project (Sandboxes) and hears its events (Listen).
package tasks

import (
	"context"
	"errors"
	"sync"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// Sandboxes gives the running sandbox of a project (canonical path): an
// error that wraps the caller's not-running sentinel when it is not.
type Sandboxes interface {
	Running(ctx context.Context, project string) (workspace.Sandbox, error)
}

// Notification is a task's event, as sandbox/task carries it: Seq numbers
// a task's events from 1, in order. After a sidecar restart the events of
// a task are read again with the same numbers, so a client may see a Seq
// twice and keeps the first.
type Notification struct {
	TaskID      string `json:"taskId"`
	ProjectPath string `json:"projectPath"`
	Seq         int    `json:"seq"`
	Event       Event  `json:"event"`
}

// Options are what a Manager needs.
type Options struct {
	// Runner is the source of the in-container runner
	// (resources.TaskRunner).
	Runner []byte
	// Workspace is what the workspaces need (the program, and the state
	// directory, where the tasks' records go too).
	Workspace workspace.Options
	// MaxTasks is how many tasks may run at once in a project's sandbox
	// (config.json maxTasks); nil or a value below 1 means one.
	MaxTasks func(project string) int
	// Models opens a task's access to the model gateway as it starts;
	// nil: tasks get none.
	Models Models
	Logger zerolog.Logger
}

// Manager runs and follows tasks.
type Manager struct {
	sandboxes Sandboxes
	opts      Options
	records   records
	// ctx ends the following of tasks (Close); the tasks go on in their
	// sandboxes.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the goroutines that follow tasks

	// mu guards tasks, locks and listeners. Lock order: mu before a
	// task's own mu, never after; a workspace's lock (locks) is never
	// taken under mu, nor is a listener called.
	mu    sync.Mutex
	tasks map[string]*task // the tasks this process follows or followed
	// locks serialize, per container, what changes its workspace: a
	// sync, a task's start and its end's save, a discard.
	locks     map[string]*sync.Mutex
	listeners map[int]func(Notification)
	nextID    int
}

// Errors the caller tells apart (rpc maps them to codes).
var (
	// ErrTaskNotFound: no task has that id.
	ErrTaskNotFound = errors.New("no such task")
	// ErrBusy: the sandbox runs as many tasks as it may, or a sync or a
	// discard would change the files of a running task.
	ErrBusy = errors.New("the sandbox is busy with a task")
	// ErrNotFinished: the task's change is read once it ended.
	ErrNotFinished = errors.New("the task has not finished")
	// ErrSandboxGone: the task's sandbox no longer runs the container the
	// task ran in (stopped, or made anew): its change cannot be read.
	ErrSandboxGone = errors.New("the task's sandbox is not running the container the task ran in")
	// ErrProjectGone: the task's project directory is gone (moved or
	// removed); nothing was written.
	ErrProjectGone = errors.New("the project's directory is gone (moved or removed?); nothing was written")
)

// New returns a manager; Reattach follows the tasks of an earlier sidecar.
func New(sandboxes Sandboxes, opts Options) *Manager {
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		sandboxes: sandboxes, opts: opts, records: records{dir: recordsDir(opts.Workspace.StateDir)},
		ctx: ctx, cancel: cancel, tasks: map[string]*task{}, locks: map[string]*sync.Mutex{},
		listeners: map[int]func(Notification){},
	}
}

// Listen calls fn with every event of every task this process follows, in
// order for each task (from one goroutine per task), until stop. Fn must
// not block: it holds up the task's following.
func (m *Manager) Listen(fn func(Notification)) (stop func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.nextID
	m.nextID++
	m.listeners[id] = fn
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.listeners, id)
	}
}

// notify sends n to every listener.
func (m *Manager) notify(n Notification) {
	m.mu.Lock()
	fns := make([]func(Notification), 0, len(m.listeners))
	for _, fn := range m.listeners {
		fns = append(fns, fn)
	}
	m.mu.Unlock()
	for _, fn := range fns {
		fn(n)
	}
}

// Close stops following tasks and waits for the followers to end. The
// tasks themselves go on; the next sidecar reattaches to them.
func (m *Manager) Close() {
	m.cancel()
	m.wg.Wait()
}

// lock takes the lock of a container's workspace and returns its release.
func (m *Manager) lock(container string) func() {
	m.mu.Lock()
	l := m.locks[container]
	if l == nil {
		l = &sync.Mutex{}
		m.locks[container] = l
	}
	m.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (m *Manager) workspace(sb workspace.Sandbox, project string) *workspace.Workspace {
	return workspace.New(sb, project, m.opts.Workspace)
}

// running counts the tasks this process follows that run in a container.
func (m *Manager) running(container string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.tasks {
		if r := t.record(); r.Container == container && r.Status == StatusRunning {
			n++
		}
	}
	return n
}

func (m *Manager) maxTasks(project string) int {
	if m.opts.MaxTasks == nil {
		return 1
	}
	return max(1, m.opts.MaxTasks(project))
}
