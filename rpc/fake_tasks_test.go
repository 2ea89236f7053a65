package rpc

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// fakeTasks serves Tasks from memory: a task of the command "echo WORDS"
// runs at once (started, a line, finished) and its change is the file
// main.go; the project "busy" runs a task already. Apply of task-1 finds
// the user's edit of main.go unless it is asked for lib/lib.go alone;
// task-2's change reaches out of the project.
type fakeTasks struct {
	mu        sync.Mutex // guards listeners, the counters and records
	listeners map[int]func(tasks.Notification)
	listened  int // listeners so far
	next      int // tasks so far
	records   []tasks.Record
}

func newFakeTasks() *fakeTasks { return &fakeTasks{listeners: map[int]func(tasks.Notification){}} }

const fakeBase = "1111111111111111111111111111111111111111"

func (f *fakeTasks) Sync(_ context.Context, path string, report func(workspace.Progress)) (workspace.Synced, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return workspace.Synced{}, err
	}
	if projectBusy(project) {
		return workspace.Synced{}, fmt.Errorf("%w: task task-0 runs there, and a sync would change the files under it", tasks.ErrBusy)
	}
	report(workspace.Progress{Files: 3, TotalFiles: 3, Bytes: 42, TotalBytes: 42})
	return workspace.Synced{Files: 3, Bytes: 42, Changed: true, Base: fakeBase, Sent: 3, SentBytes: 42}, nil
}

func projectBusy(project string) bool { return len(project) > 4 && project[len(project)-4:] == "busy" }

func (f *fakeTasks) Start(ctx context.Context, req tasks.StartRequest, report func(workspace.Progress)) (tasks.Record, error) {
	if err := req.Check(); err != nil {
		return tasks.Record{}, err
	}
	if !req.NoSync {
		if _, err := f.Sync(ctx, req.ProjectPath, report); err != nil {
			return tasks.Record{}, err
		}
	}
	project, _ := projectfs.Canonical(req.ProjectPath)
	f.mu.Lock()
	f.next++
	rec := tasks.Record{ID: fmt.Sprintf("task-%d", f.next), ProjectPath: project, Agent: req.Agent, Argv: req.Command,
		Timeout: "30m0s", Container: "c0ffee", Base: fakeBase, Status: tasks.StatusRunning, StartedAt: 1700000000000}
	f.mu.Unlock()
	f.emit(&rec, tasks.Event{Type: tasks.TypeStarted, Body: &tasks.Started{Agent: rec.Agent, Argv: rec.Argv, Base: fakeBase}})
	f.emit(&rec, tasks.Event{Type: tasks.TypeLine, TimeMs: 3, Body: &tasks.Line{Stream: "stdout", Text: req.Command[len(req.Command)-1]}})
	fin := &tasks.Finished{Status: tasks.StatusSucceeded, DurationMs: 5, Commit: "2222222222222222222222222222222222222222"}
	rec.Status, rec.Finished, rec.FinishedAt = fin.Status, fin, 1700000000005
	f.emit(&rec, tasks.Event{Type: tasks.TypeFinished, TimeMs: 5, Body: fin})
	f.mu.Lock()
	f.records = append([]tasks.Record{rec}, f.records...)
	f.mu.Unlock()
	return rec, nil
}

func (f *fakeTasks) emit(rec *tasks.Record, ev tasks.Event) {
	rec.Events++
	f.mu.Lock()
	fns := make([]func(tasks.Notification), 0, len(f.listeners))
	for _, fn := range f.listeners {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(tasks.Notification{TaskID: rec.ID, ProjectPath: rec.ProjectPath, Seq: rec.Events, Event: ev})
	}
}

func (f *fakeTasks) List(path string) ([]tasks.Record, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []tasks.Record{}
	for _, r := range f.records {
		if r.ProjectPath == project {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeTasks) record(id string) (tasks.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.records {
		if r.ID == id {
			return r, nil
		}
	}
	return tasks.Record{}, fmt.Errorf("%w: %s", tasks.ErrTaskNotFound, id)
}

func (f *fakeTasks) Get(_ context.Context, id string) (tasks.Got, error) {
	rec, err := f.record(id)
	return tasks.Got{Task: rec, Events: []tasks.Event{{Type: tasks.TypeFinished, TimeMs: 5, Body: rec.Finished}}, Dropped: 2}, err
}

func (f *fakeTasks) Cancel(_ context.Context, id string) (tasks.Record, error) { return f.record(id) }

func (f *fakeTasks) Diff(_ context.Context, id string) (workspace.Diff, error) {
	if _, err := f.record(id); err != nil {
		return workspace.Diff{}, err
	}
	return workspace.Diff{Base: fakeBase, Files: []workspace.FileChange{
		{Path: "main.go", Status: "modified", Additions: 2, Deletions: 0},
		{Path: "lib/lib.go", Status: "added", Additions: 1},
	}, Patch: "diff --git a/main.go b/main.go\n..."}, nil
}

func (f *fakeTasks) Apply(_ context.Context, id string, paths []string) ([]string, error) {
	if _, err := f.record(id); err != nil {
		return nil, err
	}
	switch {
	case id == "task-2":
		return nil, &workspace.UnsafeError{Path: "../outside", Reason: "leaves the project"}
	case slices.Equal(paths, []string{"lib/lib.go"}):
		return paths, nil
	case paths != nil:
		return nil, fmt.Errorf("%w: %q", workspace.ErrBadPath, paths[0])
	}
	return nil, &workspace.ConflictError{Paths: []string{"main.go"}}
}

func (f *fakeTasks) Discard(_ context.Context, id string) error {
	_, err := f.record(id)
	return err
}

func (f *fakeTasks) Listen(fn func(tasks.Notification)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listened++
	key := f.listened
	f.listeners[key] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.listeners, key)
	}
}
