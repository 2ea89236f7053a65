package service

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// fakePipes is a dial function that counts its calls and hands out one
// end of a net.Pipe each time, or fails the calls listed in fail.
type fakePipes struct {
	mu     sync.Mutex
	calls  int
	fail   map[int]bool
	dialed chan net.Conn // the pipes handed out, in order
	far    []net.Conn    // the other ends
}

func newFakePipes(fail ...int) *fakePipes {
	f := &fakePipes{fail: map[int]bool{}, dialed: make(chan net.Conn, 16)}
	for _, n := range fail {
		f.fail[n] = true
	}
	return f
}

func (f *fakePipes) dial(ctx context.Context) (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail[f.calls] {
		return nil, errors.New("exec failed")
	}
	a, b := net.Pipe()
	f.far = append(f.far, b)
	f.dialed <- a
	return a, nil
}

// next waits for the next pipe dialed.
func (f *fakePipes) next(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-f.dialed:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no pipe was dialed")
		return nil
	}
}

func TestSpareDialerHandsOverThePipeMadeAhead(t *testing.T) {
	f := newFakePipes()
	s := newSpareDialer(f.dial)
	defer s.Close()
	ahead := f.next(t) // made before anyone asked
	got, err := s.Dial(context.Background())
	if err != nil || unwrap(got) != ahead {
		t.Fatalf("Dial: %v, %v; want the pipe made ahead", got, err)
	}
	second := f.next(t) // the next spare, made at once
	if got, err := s.Dial(context.Background()); err != nil || unwrap(got) != second {
		t.Fatalf("second Dial: %v, %v; want the second spare", got, err)
	}
	// What the pipe says comes whole, its first byte included (the one
	// read while the pipe was spare).
	f.mu.Lock()
	far := f.far[0]
	f.mu.Unlock()
	go far.Write([]byte("hello"))
	got.SetReadDeadline(time.Now().Add(5 * time.Second)) // a lost byte fails, not hangs
	buf := make([]byte, 5)
	if _, err := io.ReadFull(got, buf[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(got, buf[1:]); err != nil || string(buf) != "hello" {
		t.Errorf("read %q, %v; want hello", buf, err)
	}
}

func unwrap(c net.Conn) net.Conn {
	if w, ok := c.(*watchedConn); ok {
		return w.Conn
	}
	return c
}

func TestSpareDialerReplacesASpareWhosePipeEnded(t *testing.T) {
	f := newFakePipes()
	s := newSpareDialer(f.dial)
	defer s.Close()
	f.next(t)
	f.mu.Lock()
	f.far[0].Close() // the pipe's process was killed in the sandbox
	f.mu.Unlock()
	s.mu.Lock()
	ch := s.spare
	s.mu.Unlock()
	d := <-ch
	deadline := time.Now().Add(10 * time.Second)
	for d.conn.(*watchedConn).alive() {
		if time.Now().After(deadline) {
			t.Fatal("the ended pipe still looks alive")
		}
		time.Sleep(time.Millisecond)
	}
	ch <- d
	got, err := s.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fresh := f.next(t); got != fresh {
		t.Errorf("Dial returned %v, not a fresh pipe %v", got, fresh)
	}
}

func TestSpareDialerTriesAfreshWhenTheSpareFailed(t *testing.T) {
	f := newFakePipes(1)
	s := newSpareDialer(f.dial)
	defer s.Close()
	got, err := s.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fresh := f.next(t); got != fresh {
		t.Errorf("Dial returned %v, not the fresh pipe %v", got, fresh)
	}
}

func TestSpareDialerCloseEndsTheSpare(t *testing.T) {
	f := newFakePipes()
	s := newSpareDialer(f.dial)
	f.next(t)
	s.Close()
	// The spare's far end sees it closed: its exec's stdin ends.
	f.mu.Lock()
	far := f.far[0]
	f.mu.Unlock()
	far.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := far.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the spare is still open: %v", err)
	}
	if _, err := s.Dial(context.Background()); err != nil {
		t.Fatal(err) // a Dial after Close still dials, fresh
	}
	f.next(t)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls != 2 {
		t.Errorf("%d dials, want 2: a closed dialer made a spare", f.calls)
	}
}
