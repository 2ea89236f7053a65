package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/tasks"
)

// BenchmarkStartToFirstLine is a command task's start (without a sync, on
// a synced workspace) to its first output line heard as an event.
func BenchmarkStartToFirstLine(b *testing.B) {
	benchStart(b, true)
}

// BenchmarkStartWithSyncToFirstLine is the same with the sync a start does
// by default, of a small project that did not change.
func BenchmarkStartWithSyncToFirstLine(b *testing.B) {
	benchStart(b, false)
}

func benchStart(b *testing.B, noSync bool) {
	e := newEnv(b, nil)
	write(b, e.project, "main.go", "package main\n")
	ctx := context.Background()
	if _, err := e.tasks.Sync(ctx, e.project, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rec, err := e.tasks.Start(ctx, tasks.StartRequest{ProjectPath: e.project, Agent: tasks.AgentCommand, Command: []string{"echo", "first"}, NoSync: noSync}, nil)
		if err != nil {
			b.Fatal(err)
		}
		e.waitFirstLine(rec.ID)
		b.StopTimer()
		e.finished(rec.ID, time.Minute)
		b.StartTimer()
	}
}

// waitFirstLine waits until the task's first line event was heard.
func (e *env) waitFirstLine(id string) {
	for {
		e.mu.Lock()
		for _, n := range e.heard {
			if n.TaskID == id && n.Event.Type == tasks.TypeLine {
				e.mu.Unlock()
				return
			}
		}
		e.mu.Unlock()
		<-e.change
	}
}
