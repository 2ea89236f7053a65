package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// slowSandbox holds its starts and execs until released, as a first start
// building the image does, and tells its subscribers how a start goes.
type slowSandbox struct {
	fakeSandbox
	release   chan struct{} // closed to let held calls end
	cancelled chan struct{} // closed when a held call saw its context end

	mu     sync.Mutex // guards starts, subs
	starts int
	subs   []chan service.Event
}

func newSlowSandbox() *slowSandbox {
	return &slowSandbox{fakeSandbox: fakeSandbox{display: desktop.DefaultDisplay},
		release: make(chan struct{}), cancelled: make(chan struct{})}
}

func (s *slowSandbox) Start(ctx context.Context, p string) (service.State, error) {
	s.mu.Lock()
	s.starts++
	s.mu.Unlock()
	s.publish(service.Progress{ProjectPath: p, Stage: service.StageImage, Message: "Step 3/9 : RUN apt-get install", Current: 3, Total: 9})
	if err := s.hold(ctx); err != nil {
		return service.State{}, err
	}
	s.publish(service.Progress{ProjectPath: p, Stage: service.StageReady, Message: "The desktop is ready"})
	return service.State{Status: service.StatusRunning, Display: s.display}, nil
}

func (s *slowSandbox) Exec(ctx context.Context, p string, r service.ExecRequest) (service.ExecOutput, error) {
	if err := s.hold(ctx); err != nil {
		return service.ExecOutput{}, err
	}
	return service.ExecOutput{Stdout: "built\n"}, nil
}

func (s *slowSandbox) hold(ctx context.Context) error {
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		close(s.cancelled)
		return ctx.Err()
	}
}

func (s *slowSandbox) startCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts
}

func (s *slowSandbox) Subscribe() (<-chan service.Event, func()) {
	ch := make(chan service.Event, 10)
	s.mu.Lock()
	s.subs = append(s.subs, ch)
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, c := range s.subs {
			if c == ch {
				s.subs = append(s.subs[:i], s.subs[i+1:]...)
				close(ch)
			}
		}
	}
}

func (s *slowSandbox) publish(p service.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.subs {
		ch <- service.Event{Kind: service.EventProgress, Project: p.ProjectPath, Progress: p}
	}
}

// callSet calls a tool; one that has not answered after 10 s fails the
// test (the answer bound is the point of these tests).
func callSet(t *testing.T, ctx context.Context, s *Set, name, args string) Result {
	t.Helper()
	answered := make(chan Result, 1)
	go func() {
		res, err := s.Call(ctx, "/p", name, json.RawMessage(args))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		answered <- res
	}()
	select {
	case res := <-answered:
		return res
	case <-time.After(10 * time.Second):
		t.Errorf("%s %s: no answer after 10s", name, args)
		return Result{}
	}
}

// A start that outlives the bound answers that it goes on; a second start
// joins it rather than starting again, and sandbox_wait gives its result.
func TestLongStartAnswersWithinTheBoundAndGoesOn(t *testing.T) {
	sb := newSlowSandbox()
	s := For(sb, Bound(20*time.Millisecond))
	defer s.Close()
	ctx := context.Background()

	first := callSet(t, ctx, s, "sandbox_start", `{}`)
	want := "sandbox_start is still running after 0 seconds (now building the sandbox image (a first start takes a few " +
		"minutes), step 3 of 9: Step 3/9 : RUN apt-get install). It goes on in the background: call sandbox_wait"
	if first.IsError || !strings.HasPrefix(textOf(first), want) {
		t.Fatalf("first start answered %q (isError %v), want %q...", textOf(first), first.IsError, want)
	}
	if again := callSet(t, ctx, s, "sandbox_start", `{}`); !strings.Contains(textOf(again), "sandbox_start is still running") {
		t.Errorf("second start answered %q", textOf(again))
	}
	if n := sb.startCount(); n != 1 {
		t.Errorf("the second start started again: %d starts", n)
	}
	if res := callSet(t, ctx, s, "sandbox_wait", `{"seconds": 0}`); !strings.HasPrefix(textOf(res), "sandbox_start is still running (for 0 seconds, now building") {
		t.Errorf("wait while starting: %q", textOf(res))
	}

	close(sb.release)
	s.jobs.bound = time.Hour // the wait below must end with the start, not the bound
	res := callSet(t, ctx, s, "sandbox_wait", `{"seconds": 30}`)
	if res.IsError || textOf(res) != "sandbox_start has ended:\nThe sandbox is running: a 1280x800 Linux desktop (fluxbox, with xterm). The user can watch it. Take a screenshot to see the screen." {
		t.Errorf("wait after the start: %q (isError %v)", textOf(res), res.IsError)
	}
	if res := callSet(t, ctx, s, "sandbox_wait", `{"seconds": 0}`); textOf(res) != "Waited 0 seconds." {
		t.Errorf("the start was reported twice: %q", textOf(res))
	}
}

// A long command answers within the bound too, and its output comes with
// the next sandbox_wait.
func TestLongExecResultComesWithTheWait(t *testing.T) {
	sb := newSlowSandbox()
	s := For(sb, Bound(20*time.Millisecond))
	defer s.Close()
	res := callSet(t, context.Background(), s, "sandbox_exec", `{"command": "make"}`)
	if !strings.HasPrefix(textOf(res), "sandbox_exec is still running after 0 seconds. It goes on") || strings.Contains(textOf(res), "sandbox_start again") {
		t.Fatalf("exec answered %q", textOf(res))
	}
	close(sb.release)
	s.jobs.bound = time.Hour
	if res := callSet(t, context.Background(), s, "sandbox_wait", `{"seconds": 30}`); textOf(res) != "sandbox_exec has ended:\nExit code 0.\n\nstdout:\nbuilt\n" {
		t.Errorf("wait: %q", textOf(res))
	}
}

// A cancelled call stops its work, unless it was already left to run on.
func TestCancelStopsTheWork(t *testing.T) {
	sb := newSlowSandbox()
	s := For(sb)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan Result)
	go func() { answered <- callSet(t, ctx, s, "sandbox_start", `{}`) }()
	waitFor(t, "the start to begin", func() bool { return sb.startCount() == 1 })
	cancel()
	if res := <-answered; !res.IsError || textOf(res) != "The call was cancelled." {
		t.Errorf("cancelled start answered %q", textOf(res))
	}
	select {
	case <-sb.cancelled: // the start saw its context end
	case <-time.After(10 * time.Second):
		t.Fatal("the start went on after its call was cancelled")
	}
}

func TestCancelledWaitLeavesTheBackgroundStartRunning(t *testing.T) {
	sb := newSlowSandbox()
	s := For(sb, Bound(20*time.Millisecond))
	defer s.Close()
	callSet(t, context.Background(), s, "sandbox_start", `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := callSet(t, ctx, s, "sandbox_wait", `{"seconds": 30}`); textOf(res) != "The call was cancelled." {
		t.Errorf("cancelled wait: %q", textOf(res))
	}
	select {
	case <-sb.cancelled:
		t.Fatal("cancelling a wait stopped the start it waited for")
	default:
	}
	close(sb.release)
	s.jobs.bound = time.Hour
	if res := callSet(t, context.Background(), s, "sandbox_start", `{}`); !strings.HasPrefix(textOf(res), "The sandbox is running") {
		t.Errorf("start after: %q", textOf(res))
	}
}

// Progress reaches the calls waiting for a start, joined ones too, and
// none arrives after a call has answered.
func TestProgressReachesEveryWaitingCall(t *testing.T) {
	sb := newSlowSandbox()
	s := For(sb)
	defer s.Close()
	var mu sync.Mutex
	got := map[string][]string{}
	answered := map[string]bool{}
	record := func(who string) context.Context {
		return WithProgress(context.Background(), func(p service.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if answered[who] {
				t.Errorf("%s got progress after its answer: %+v", who, p)
			}
			got[who] = append(got[who], p.Stage)
		})
	}
	var wg sync.WaitGroup
	for i, who := range []string{"first", "second"} {
		wg.Go(func() {
			res := callSet(t, record(who), s, "sandbox_start", `{}`)
			mu.Lock()
			answered[who] = true
			mu.Unlock()
			if !strings.HasPrefix(textOf(res), "The sandbox is running") {
				t.Errorf("%s: %q", who, textOf(res))
			}
		})
		waitFor(t, who+" to wait", func() bool { return waiters(s, "/p") == i+1 })
	}
	close(sb.release)
	wg.Wait()
	if n := sb.startCount(); n != 1 {
		t.Errorf("%d starts, want 1", n)
	}
	// The first call waited from the start on; the second joined later.
	if g := strings.Join(got["first"], ","); g != "image,ready" {
		t.Errorf("first got %s", g)
	}
	if g := strings.Join(got["second"], ","); !strings.HasSuffix(g, "ready") {
		t.Errorf("second got %s", g)
	}
}

// A call that answered that its start goes on hears no more of it.
func TestNoProgressAfterTheAnswer(t *testing.T) {
	sb := newSlowSandbox()
	s := For(sb, Bound(20*time.Millisecond))
	defer s.Close()
	var mu sync.Mutex
	var got []string
	ctx := WithProgress(context.Background(), func(p service.Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p.Stage)
	})
	if res := callSet(t, ctx, s, "sandbox_start", `{}`); !strings.Contains(textOf(res), "still running") {
		t.Fatalf("start: %q", textOf(res))
	}
	close(sb.release)
	s.jobs.bound = time.Hour
	callSet(t, context.Background(), s, "sandbox_wait", `{"seconds": 30}`) // the start has ended, ready sent
	mu.Lock()
	defer mu.Unlock()
	if g := strings.Join(got, ","); g != "image" {
		t.Errorf("progress %s, want image only", g)
	}
}

func waiters(s *Set, project string) int {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	n := 0
	for _, j := range s.jobs.kept {
		if j.project == project {
			n += len(j.waiters)
		}
	}
	return n
}

func TestCloseStopsBackgroundCalls(t *testing.T) {
	sb := newSlowSandbox()
	s := For(sb, Bound(20*time.Millisecond))
	callSet(t, context.Background(), s, "sandbox_start", `{}`)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed: // Close returns once the background start has ended
	case <-time.After(10 * time.Second):
		t.Fatal("Close left the background start running")
	}
	<-sb.cancelled
	if res := callSet(t, context.Background(), s, "sandbox_click", `{"x": 1, "y": 1}`); !res.IsError || !strings.Contains(textOf(res), "shutting down") {
		t.Errorf("a call after Close: %q", textOf(res))
	}
}

// waitFor polls cond until it holds, and fails the test if it never does.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not so after 10s", what)
		}
	}
}
