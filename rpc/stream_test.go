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
			s := NewServer(newFakeService(), fakeTools{}, Info{}, zerolog.New(&log))
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
// message is read only when one ends, so a client cannot have goroutines
// and replies pile up by sending faster than calls end.
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
	s := NewServer(fake, fakeTools{}, Info{}, zerolog.Nop())
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
	ids := make([]string, 0, maxRunningCalls+1)
	for _, line := range out.lines() {
		var m struct{ ID json.RawMessage }
		json.Unmarshal([]byte(line), &m)
		ids = append(ids, string(m.ID))
	}
	if ids[0] == `"after"` {
		t.Errorf("the request after %d held calls ran before any of them ended", maxRunningCalls)
	}
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
