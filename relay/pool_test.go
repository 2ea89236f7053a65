package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRelays starts fake relays of the connect role: each says it waits,
// and is a net.Pipe whose far end the test holds. The starts listed in
// fail fail.
type fakeRelays struct {
	mu      sync.Mutex
	calls   int
	fail    map[int]bool
	far     []net.Conn
	started chan net.Conn // each far end, as its relay starts
}

func newFakeRelays(fail ...int) *fakeRelays {
	f := &fakeRelays{fail: map[int]bool{}, started: make(chan net.Conn, 16)}
	for _, n := range fail {
		f.fail[n] = true
	}
	return f
}

func (f *fakeRelays) start(ctx context.Context) (Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail[f.calls] {
		return nil, errors.New("exec failed")
	}
	near, far := socketPair()
	f.far = append(f.far, far)
	go far.Write([]byte{readyByte})
	f.started <- far
	return pipeSession{Conn: near}, nil
}

// next waits for the next relay started, and returns its far end.
func (f *fakeRelays) next(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-f.started:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no relay was started")
		return nil
	}
}

func (f *fakeRelays) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// told reads the go byte at a relay's far end.
func told(t *testing.T, far net.Conn) {
	t.Helper()
	far.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(far, b); err != nil || b[0] != goByte[0] {
		t.Fatalf("the relay was not told to connect: %q, %v", b, err)
	}
	far.SetReadDeadline(time.Time{})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 10s", what)
		}
	}
}

func TestPoolHandsOverTheRelayStartedAhead(t *testing.T) {
	f := newFakeRelays()
	p := NewPool(1, f.start)
	defer p.Close()
	p.Fill()
	ahead := f.next(t) // started before anyone asked
	waitFor(t, "the relay waits", func() bool { return p.Waiting() == 1 })
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	told(t, ahead)
	f.next(t) // the next, started at once
	// What the relay carries comes whole, its first byte included (the
	// one read while it waited).
	go ahead.Write(append(frame("hello"), frame("")...))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "hello" {
		t.Errorf("read %q, %v; want hello", got, err)
	}
}

func TestPoolReplacesARelayThatEndedWhileItWaited(t *testing.T) {
	f := newFakeRelays()
	p := NewPool(1, f.start)
	defer p.Close()
	p.Fill()
	far := f.next(t)
	waitFor(t, "the relay waits", func() bool { return p.Waiting() == 1 })
	far.Close() // its process was killed in the sandbox
	p.mu.Lock()
	s := p.slots[0]
	p.mu.Unlock()
	waitFor(t, "the ended relay is seen", func() bool { return !s.w.alive() })
	if _, err := p.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	told(t, f.next(t)) // a fresh one carries the connection
}

func TestPoolTriesAfreshWhenTheRelayAheadFailed(t *testing.T) {
	f := newFakeRelays(1)
	p := NewPool(1, f.start)
	defer p.Close()
	p.Fill()
	if _, err := p.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	told(t, f.next(t))
}

func TestPoolWithoutFillStartsOnDemand(t *testing.T) {
	f := newFakeRelays()
	p := NewPool(2, f.start)
	defer p.Close()
	if _, err := p.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	told(t, f.next(t))
	waitFor(t, "the pool fills after its first use", func() bool { return p.Waiting() == 2 })
}

func TestPoolCloseEndsTheWaitingRelays(t *testing.T) {
	f := newFakeRelays()
	p := NewPool(1, f.start)
	p.Fill()
	far := f.next(t)
	waitFor(t, "the relay waits", func() bool { return p.Waiting() == 1 })
	p.Close()
	// The relay's far end sees it closed: its exec's stdin ends.
	far.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := far.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the waiting relay is still open: %v", err)
	}
	if _, err := p.Get(context.Background()); err != nil {
		t.Fatal(err) // a Get after Close still starts one, fresh
	}
	if n := f.count(); n != 2 {
		t.Errorf("%d relays started, want 2: a closed pool started one for itself", n)
	}
}

func TestPoolGetGivesUpWithItsContext(t *testing.T) {
	f := newFakeRelays()
	block := make(chan struct{})
	p := NewPool(1, func(ctx context.Context) (Session, error) {
		<-block
		return f.start(ctx)
	})
	defer p.Close()
	p.Fill()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with an ended context: %v", err)
	}
	close(block)
}

func TestPoolSaysWhyARelayDidNotStart(t *testing.T) {
	p := NewPool(0, func(ctx context.Context) (Session, error) {
		near, far := socketPair()
		go func() { far.Write([]byte("x")); far.Close() }()
		return pipeSession{Conn: near, stderr: "python3: not found"}, nil
	})
	_, err := p.Get(context.Background())
	if err == nil || !strings.Contains(err.Error(), "python3: not found") || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("%v; want what the relay wrote and its stderr", err)
	}
}
