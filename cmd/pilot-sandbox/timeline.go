package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// timeline is the process's side of the sandboxes' timelines
// (docs/activity.md): what its tools, its JSON-RPC methods, its
// permission questions and its tasks did, appended to the user's state,
// and what every other sidecar of the user appended, followed until
// close; and who holds each desktop (Control).
type timeline struct {
	*activity.Recorder
	control *activity.Control // who holds the desktops, followed too
	close   func()
}

// openTimeline follows the timelines under stateDir and records the
// questions of broker, the starts and ends of tm's tasks, and the stops
// and failures m sees that no method made.
func openTimeline(stateDir string, m *service.Manager, broker *permission.Broker, tm *tasks.Manager) *timeline {
	rec := activity.NewRecorder(stateDir)
	ctx, cancel := context.WithCancel(context.Background())
	control := activity.NewControl(stateDir)
	events, unsubscribe := m.Subscribe()
	var wg sync.WaitGroup
	wg.Go(func() { rec.Follow(ctx) })
	wg.Go(func() { control.Follow(ctx) })
	wg.Go(func() { recordLifecycle(rec, events) }) // ends with unsubscribe
	stopQuestions := broker.Listen("", func(e permission.Event) { recordQuestion(rec, e) })
	stopTasks := tm.Listen(func(n tasks.Notification) { recordTask(rec, n) })
	return &timeline{Recorder: rec, control: control, close: func() {
		stopTasks()
		stopQuestions()
		unsubscribe()
		cancel()
		wg.Wait()
	}}
}

// recordLifecycle records what happens to a sandbox without a method of
// the app's asking: the lifecycle policy's stops (stopReason) and a
// desktop that died (status error). Every sidecar of the user sees them
// at once; the first records each, named by its container's run
// (AddOnce). Source rpc, client pilot-sandbox: the sidecar itself.
func recordLifecycle(rec *activity.Recorder, events <-chan service.Event) {
	for ev := range events {
		st := ev.State
		if ev.Kind != service.EventState || st == nil || st.ContainerID == "" {
			continue
		}
		e := activity.Entry{Source: activity.SourceRPC, Client: "pilot-sandbox", Kind: activity.KindLifecycle}
		switch {
		case st.Status == service.StatusStopped && st.StopReason != "":
			e.Name, e.Summary = "stopped", st.StopReason
		case st.Status == service.StatusError && st.Error != "":
			e.Name, e.Summary, e.IsError = "error", st.Error, true
		default:
			continue
		}
		run := fmt.Sprintf("%.12s@%d", st.ContainerID, st.StartedAt)
		rec.AddOnce(context.Background(), st.ProjectPath, run+" "+e.Name, e)
	}
}

// recordQuestion records a permission question as it is asked (the
// sidecar asks: source rpc) and as it ends (the user's answer, or none).
func recordQuestion(rec *activity.Recorder, e permission.Event) {
	ctx := context.Background()
	switch {
	case e.Asked != nil:
		q := e.Asked
		rec.Add(ctx, q.Project, activity.Entry{Source: activity.SourceRPC, Kind: activity.KindPermission, Name: "asked " + q.Kind, Summary: q.Summary})
	case e.Resolved != nil:
		r := e.Resolved
		source := activity.SourceRPC
		if r.By == permission.ByUser {
			source = activity.SourceUser
		}
		rec.Add(ctx, r.Project, activity.Entry{Source: source, Kind: activity.KindPermission, Name: r.Decision,
			Summary: fmt.Sprintf("question %s: %s by %s %s", r.ID, r.Decision, r.By, r.Reason)})
	}
}

// recordTask records a task's start and end, once: a sidecar that
// reattaches to a task reads its events again from the first, and two
// sidecars may follow one task.
func recordTask(rec *activity.Recorder, n tasks.Notification) {
	e := activity.Entry{Source: activity.SourceTask, Kind: activity.KindTask, Client: n.TaskID}
	switch b := n.Event.Body.(type) {
	case *tasks.Started:
		e.Name, e.Summary = "started", b.Agent
	case *tasks.Finished:
		e.Name, e.Summary, e.DurationMs = "finished", fmt.Sprintf("%s, exit %d", b.Status, b.ExitCode), b.DurationMs
		e.IsError = b.Status != tasks.StatusSucceeded
	default:
		return
	}
	if !recorded(rec, n.ProjectPath, e) {
		rec.Add(context.Background(), n.ProjectPath, e)
	}
}

// taskLookback is how many of a timeline's newest entries are searched for
// a task's start or end recorded already.
const taskLookback = 1000

func recorded(rec *activity.Recorder, project string, e activity.Entry) bool {
	entries, _ := rec.Log().Read(project, 0, taskLookback)
	for _, old := range entries {
		if old.Kind == e.Kind && old.Client == e.Client && old.Name == e.Name {
			return true
		}
	}
	return false
}

// taskOrigin records the calls of a task's agent to the tools inside its
// sandbox as the task's.
type taskOrigin struct{ *activity.Recorder }

func (t taskOrigin) Add(ctx context.Context, project string, e activity.Entry) error {
	e.Source = activity.SourceTask
	return t.Recorder.Add(ctx, project, e)
}

// options make a tool set record its calls and yield the desktop to the
// user who holds it.
func (t *timeline) options() []tools.Option {
	return []tools.Option{tools.Record(t.Recorder), tools.Control(t.control)}
}
