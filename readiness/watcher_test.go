package readiness

import (
	"context"
	"sync"
	"testing"
	"time"
)

// While a wait for a project runs, asks about it start no other; another
// project's wait runs beside it; once a wait ends, the next ask starts
// one. Run returns only once every wait has.
func TestWatcherRunsOneWaitPerProject(t *testing.T) {
	w := NewWatcher(8)
	var mu sync.Mutex
	started := map[string]int{}
	release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	began := make(chan string, 8)
	ended := make(chan string, 8)
	await := func(ctx context.Context, project string) {
		mu.Lock()
		started[project]++
		mu.Unlock()
		began <- project
		select {
		case <-release[project]:
		case <-ctx.Done():
		}
		ended <- project
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { w.Run(ctx, await); close(ran) }()

	w.Ask("a")
	expect(t, began, "a")
	w.Ask("a")
	w.Ask("a")
	w.Ask("b")
	expect(t, began, "b") // b's wait runs while a's does
	close(release["a"])
	expect(t, ended, "a")
	mu.Lock()
	n := started["a"]
	mu.Unlock()
	if n != 1 {
		t.Errorf("asks while a wait ran started %d waits of it, want 1", n)
	}
	// a's end reaches Run before the asks that follow it may start
	// another: ask until one does.
	for again := false; !again; {
		w.Ask("a")
		select {
		case p := <-began:
			again = p == "a"
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel() // b and the second wait of a end with ctx
	<-ran
	if len(ended) != 2 {
		t.Errorf("Run returned with %d waits still running", 2-len(ended))
	}
}

func expect(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", want)
	}
}

// Ask never waits: with no Run taking asks and the queue full, it drops.
func TestAskDoesNotWait(t *testing.T) {
	w := NewWatcher(1)
	done := make(chan struct{})
	go func() {
		w.Ask("a")
		w.Ask("b")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Ask waited for a Run")
	}
}
