package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestClientThatStopsReadingIsDisconnected: a client that sends a million
// messages and reads nothing (its end of stdout a pipe nobody reads) once
// took the sidecar to 3 GB, a goroutine holding each answer. Now the
// server stops reading it when its outbox is full, closes the connection
// when a frame has waited the stall bound, and logs why.
func TestClientThatStopsReadingIsDisconnected(t *testing.T) {
	const count = 1_000_000
	for _, tc := range []struct {
		name    string
		framing Framing
		message string
	}{
		{"invalid lines", FramingNDJSON, "x\n"},
		{"invalid LSP bodies", FramingLSP, "Content-Length: 1\r\n\r\nx"},
		{"valid requests", FramingNDJSON, `{"jsonrpc":"2.0","id":1,"method":"docker/status"}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := &countingReader{r: repeatString(tc.message, count)}
			stdout := newStuckWriter(t)
			var log syncBuffer
			goroutines := runtime.NumGoroutine()
			s := newTestServer(newFakeService(), Info{}, zerolog.New(&log))
			served := make(chan struct{})
			go func() {
				defer close(served)
				s.Serve(context.Background(), newStream(newFramer(tc.framing, input, stdout), nil, 50*time.Millisecond), ConnOptions{})
			}()
			select {
			case <-served:
			case <-time.After(20 * time.Second):
				t.Fatalf("the server still serves a client that reads nothing (%d goroutines)", runtime.NumGoroutine())
			}
			if total := int64(count * len(tc.message)); input.n >= total {
				t.Errorf("the server read all %d bytes from a client that reads nothing", total)
			}
			if !strings.Contains(log.String(), "the client stopped reading") {
				t.Errorf("the log does not say why the connection was closed:\n%s", log.String())
			}
			// Calls still running end on their own, their answers
			// dropped; left are the writer, stuck in its write until the
			// pipe closes, and the read loop if it was stuck in a read.
			poll(t, "the calls to end", func() bool { return runtime.NumGoroutine()-goroutines <= 5 })
		})
	}
}

// TestRunningCallsAreBounded: past maxRunningCalls calls running, the next
// message is read only when a call ends, so a client cannot have
// goroutines and replies pile up by sending faster than calls end
// (TestAdmission checks the bound on their size).
func TestRunningCallsAreBounded(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := fakeProjects(root); err != nil {
		t.Fatal(err)
	}
	var input bytes.Buffer
	for id := range maxRunningCalls {
		fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":%d,"method":"sandbox/status","params":{"projectPath":%q}}`+"\n", id, root+"/held")
	}
	input.WriteString(`{"jsonrpc":"2.0","id":"after","method":"docker/status"}` + "\n")
	pr, pw := io.Pipe()
	go func() { pw.Write(input.Bytes()) }() // and keep the input open
	t.Cleanup(func() { pw.Close() })
	out := &lineRecorder{}
	fake := newFakeService()
	s := newTestServer(fake, Info{}, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		s.Serve(ctx, NewStream(FramingNDJSON, pr, out, nil), ConnOptions{})
	}()
	t.Cleanup(func() { cancel(); <-served })

	poll(t, "every call to be held", func() bool { return fake.heldCalls() == maxRunningCalls })
	fake.release()
	poll(t, "every call to be answered", func() bool { return len(out.lines()) == maxRunningCalls+1 })
	var first struct{ ID json.RawMessage }
	json.Unmarshal([]byte(out.lines()[0]), &first)
	if string(first.ID) == `"after"` {
		t.Errorf("the request after %d held calls ran before any of them ended", maxRunningCalls)
	}
}

// TestAdmission: a call waits while the calls running are at the limit by
// number or would pass it by the size of their params, and runs when one
// ends; one larger than the size limit runs alone.
func TestAdmission(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		limits  callLimits
		running []int64 // sizes of the calls running
		next    int64
	}{
		{"by number", callLimits{calls: 2, bytes: 100}, []int64{1, 1}, 1},
		{"by size", callLimits{calls: 10, bytes: 100}, []int64{60, 30}, 20},
		{"larger than the limit", callLimits{calls: 10, bytes: 100}, []int64{5}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmission(tc.limits)
			for _, n := range tc.running {
				if !a.enter(ctx, n) {
					t.Fatal("enter refused")
				}
			}
			entered := make(chan bool, 1)
			go func() { entered <- a.enter(ctx, tc.next) }()
			poll(t, "the call to wait", func() bool { return a.waitingCalls() == 1 })
			a.leave(tc.running[0])
			poll(t, "the call to run when room was made", func() bool { return len(entered) == 1 })
			if !<-entered {
				t.Fatal("the call was refused")
			}
		})
	}
	t.Run("the connection ends", func(t *testing.T) {
		a := newAdmission(callLimits{calls: 1, bytes: 100})
		a.enter(ctx, 1)
		ended, cancel := context.WithCancel(ctx)
		entered := make(chan bool, 1)
		go func() { entered <- a.enter(ended, 1) }()
		poll(t, "the call to wait", func() bool { return a.waitingCalls() == 1 })
		cancel()
		if <-entered {
			t.Error("a call ran after its connection ended")
		}
	})
}

// poll waits for cond: each step has a condition to reach, not a time to wait.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// repeatString is s, count times over, made as it is read.
func repeatString(s string, count int) io.Reader {
	chunk := strings.Repeat(s, max(1, (64<<10)/len(s)))
	return io.LimitReader(&cycleReader{data: chunk}, int64(count*len(s)))
}

type cycleReader struct {
	data string
	off  int
}

func (c *cycleReader) Read(p []byte) (int, error) {
	n := copy(p, c.data[c.off:])
	c.off = (c.off + n) % len(c.data)
	return n, nil
}

// stuckWriter is a pipe whose reader never reads: every write waits until
// the test ends.
type stuckWriter struct{ done chan struct{} }

func newStuckWriter(t *testing.T) *stuckWriter {
	w := &stuckWriter{done: make(chan struct{})}
	t.Cleanup(func() { close(w.done) })
	return w
}

func (w *stuckWriter) Write([]byte) (int, error) {
	<-w.done
	return 0, errors.New("the pipe is closed")
}

// lineRecorder keeps the NDJSON lines written to it.
type lineRecorder struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (r *lineRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *lineRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Split(strings.TrimSuffix(r.buf.String(), "\n"), "\n")
}

// syncBuffer is a log that goroutines write to.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestErrorMessagesAreBounded: an error that quotes what the client sent
// (a 30 MB projectPath made a 63 MB reply, and ten of them a 692 MB log)
// comes back, and is logged, cut to maxErrorMessageBytes.
func TestErrorMessagesAreBounded(t *testing.T) {
	long := "/" + strings.Repeat("é", 1<<20)
	var input bytes.Buffer
	fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":1,"method":%q}`+"\n", long)
	fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":2,"method":"sandbox/status","params":{"projectPath":%q}}`+"\n", long)
	out := &lineRecorder{}
	var log syncBuffer
	s := newTestServer(newFakeService(), Info{}, zerolog.New(&log))
	s.Serve(context.Background(), NewStream(FramingNDJSON, &input, out, nil), ConnOptions{})
	replies := out.lines()
	if len(replies) != 2 {
		t.Fatalf("%d replies, want 2", len(replies))
	}
	for _, line := range replies {
		var m struct {
			Error struct{ Message string }
		}
		err := json.Unmarshal([]byte(line), &m)
		// A message that quotes the input is cut, and says so; the
		// projectPath's own bound may refuse it without quoting it at all.
		cut := len(m.Error.Message) >= maxErrorMessageBytes
		if err != nil || len(m.Error.Message) > maxErrorMessageBytes+len("…") || (cut && !strings.HasSuffix(m.Error.Message, "é…")) {
			t.Errorf("a reply of %d bytes, its message %.60q...", len(line), m.Error.Message)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if len(line) > 2*maxErrorMessageBytes {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
}
