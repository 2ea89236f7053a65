package main

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/recording"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
)

// newRecorder is the process's recorder (docs/recording.md): recordings
// under the user's state directory, bounded by config.json's
// recordingMaxBytes, read at each start.
func newRecorder(m *service.Manager, docker *engine.Client, log zerolog.Logger) *recording.Recorder {
	return recording.New(m, docker, recording.Config{
		Dir:   filepath.Join(stateDir(), "recordings"),
		Scope: cmp.Or(os.Getenv(envScope), service.DefaultScope),
		MaxBytes: func() int64 {
			policy, _, _ := m.Policy()
			return policy.RecordingMaxBytes
		},
		Logger: log,
	})
}

// taskRecordings records every task this process follows from its start
// to its end while config.json's recordTasks is on (docs/recording.md). A
// sandbox that records already (the user started it) is left alone: its
// recording is the user's to stop.
type taskRecordings struct {
	m   *service.Manager
	rec *recording.Recorder
	log zerolog.Logger

	mu     sync.Mutex             // guards byTask
	byTask map[string]chan string // a task's recording ID, once started ("" for none)
}

// recordTasks starts following the tasks' events; stop ends it.
func recordTasks(m *service.Manager, t *tasks.Manager, rec *recording.Recorder, log zerolog.Logger) (stop func()) {
	tr := &taskRecordings{m: m, rec: rec, log: log, byTask: map[string]chan string{}}
	return t.Listen(tr.event)
}

// event hears a task's event; the work is done beside it, as the tasks'
// listeners must not wait.
func (tr *taskRecordings) event(n tasks.Notification) {
	switch n.Event.Type {
	case tasks.TypeStarted:
		if policy, _, _ := tr.m.Policy(); !policy.RecordTasks {
			return
		}
		started := make(chan string, 1)
		tr.mu.Lock()
		tr.byTask[n.TaskID] = started
		tr.mu.Unlock()
		go func() { started <- tr.start(n.ProjectPath, n.TaskID) }()
	case tasks.TypeFinished:
		tr.mu.Lock()
		started, ok := tr.byTask[n.TaskID]
		delete(tr.byTask, n.TaskID)
		tr.mu.Unlock()
		if ok {
			go tr.stop(started)
		}
	}
}

// start records the task's sandbox unless it records already; the ID of
// the recording it started, or "".
func (tr *taskRecordings) start(project, taskID string) string {
	list, err := tr.rec.List(project)
	if err == nil && slices.ContainsFunc(list, func(i recording.Info) bool { return i.State == recording.StateRecording }) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a first build of the recorder image
	defer cancel()
	id, err := tr.rec.Start(ctx, project, 0)
	if err != nil {
		tr.log.Warn().Err(err).Str("task", taskID).Msg("could not record the task (recordTasks)")
		return ""
	}
	return id
}

func (tr *taskRecordings) stop(started chan string) {
	id := <-started
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := tr.rec.Stop(ctx, id); err != nil {
		tr.log.Warn().Err(err).Str("recording", id).Msg("could not stop a task's recording")
	}
}
