package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// never is a startedFunc for execs that must not be asked about.
func never(t *testing.T) startedFunc {
	return func(context.Context, string) (bool, error) {
		t.Error("asked about an exec")
		return true, nil
	}
}

// A pause waits for the exec start under way, and holds back new ones
// until it lets go.
func TestGateWaitsForStartsAndHoldsNewOnes(t *testing.T) {
	var g execGates
	ctx := context.Background()
	if err := g.enter(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	held := make(chan func(), 1)
	go func() {
		release, err := g.hold(ctx, "c", func(context.Context, string) (bool, error) { return true, nil })
		if err != nil {
			t.Error(err)
		}
		held <- release
	}()
	select {
	case <-held:
		t.Fatal("the pause took the gate while an exec was starting")
	case <-time.After(50 * time.Millisecond):
	}
	entered := make(chan error, 1)
	go func() { entered <- g.enter(ctx, "c") }()
	g.sent("c", "x1")
	release := <-held
	select {
	case <-entered:
		t.Fatal("an exec started while the pause held the gate")
	case <-time.After(50 * time.Millisecond):
	}
	if err := g.enter(ctx, "other"); err != nil {
		t.Fatalf("another container's exec waited: %v", err)
	}
	g.sent("other", "")
	release()
	if err := <-entered; err != nil {
		t.Fatal(err)
	}
	g.sent("c", "")
	g.ended("c", "x1")
	if len(g.gates) != 0 {
		t.Fatalf("gates left behind: %v", g.gates)
	}
}

// A pause waits for each exec sent to have started, asking until it has.
func TestGateWaitsForSentExecToStart(t *testing.T) {
	var g execGates
	ctx := context.Background()
	g.enter(ctx, "c")
	g.sent("c", "slow")
	g.enter(ctx, "c")
	g.sent("c", "done")
	g.ended("c", "done") // over: not asked about
	var mu sync.Mutex
	asked := 0
	release, err := g.hold(ctx, "c", func(_ context.Context, id string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if id != "slow" {
			t.Errorf("asked about %q", id)
		}
		asked++
		return asked >= 3, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	release()
	if asked != 3 {
		t.Fatalf("asked %d times, want 3", asked)
	}
	// Started once: a second pause does not ask again.
	release, err = g.hold(ctx, "c", never(t))
	if err != nil {
		t.Fatal(err)
	}
	release()
}

// A pause whose exec never starts gives up, lets the gate go and says
// why; so does an exec waiting on a pause past its deadline.
func TestGateGivesUp(t *testing.T) {
	var g execGates
	g.enter(context.Background(), "c")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := g.hold(ctx, "c", never(t)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hold = %v, want a deadline", err)
	}
	g.sent("c", "stuck")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	_, err := g.hold(ctx2, "c", func(context.Context, string) (bool, error) { return false, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hold = %v, want a deadline", err)
	}
	// The gate was let go: execs start again.
	short, cancel3 := context.WithTimeout(context.Background(), time.Second)
	defer cancel3()
	if err := g.enter(short, "c"); err != nil {
		t.Fatalf("the gate stayed held: %v", err)
	}
	g.sent("c", "")

	release, err := g.hold(context.Background(), "d", never(t))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx4, cancel4 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel4()
	if err := g.enter(ctx4, "d"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("enter = %v, want a deadline", err)
	}
}

// An error asking about an exec fails the pause.
func TestGateFailsOnInspectError(t *testing.T) {
	var g execGates
	g.enter(context.Background(), "c")
	g.sent("c", "x")
	boom := errors.New("boom")
	if _, err := g.hold(context.Background(), "c", func(context.Context, string) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("hold = %v, want boom", err)
	}
	if err := g.enter(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
}
