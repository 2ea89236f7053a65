package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
)

// TestRunningCallsAreBounded: past wire.MaxRunningCalls calls running, the
// next message is read only when a call ends, so a client cannot have
// goroutines and replies pile up by sending faster than calls end (wire's
// TestAdmission checks the bound on their size).
func TestRunningCallsAreBounded(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := fakeProjects(root); err != nil {
		t.Fatal(err)
	}
	var input bytes.Buffer
	for id := range wire.MaxRunningCalls {
		fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":%d,"method":"sandbox/status","params":{"projectPath":%q}}`+"\n", id, root+"/held")
	}
	input.WriteString(`{"jsonrpc":"2.0","id":"after","method":"docker/status"}` + "\n")
	pr, pw := io.Pipe()
	go func() { pw.Write(input.Bytes()) }() // and keep the input open
	t.Cleanup(func() { pw.Close() })
	out := &lineRecorder{}
	fake := newFakeService()
	s := NewServer(fake.services(), Info{}, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		s.Serve(ctx, wire.NewStream(wire.FramingNDJSON, pr, out, nil), ConnOptions{})
	}()
	t.Cleanup(func() { cancel(); <-served })

	poll(t, "every call to be held", func() bool { return fake.heldCalls() == wire.MaxRunningCalls })
	fake.release()
	poll(t, "every call to be answered", func() bool { return len(out.lines()) == wire.MaxRunningCalls+1 })
	var first struct{ ID json.RawMessage }
	json.Unmarshal([]byte(out.lines()[0]), &first)
	if string(first.ID) == `"after"` {
		t.Errorf("the request after %d held calls ran before any of them ended", wire.MaxRunningCalls)
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
// comes back, and is logged, cut to wire.MaxErrorMessageBytes.
func TestErrorMessagesAreBounded(t *testing.T) {
	long := "/" + strings.Repeat("é", 1<<20)
	var input bytes.Buffer
	fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":1,"method":%q}`+"\n", long)
	fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":2,"method":"sandbox/status","params":{"projectPath":%q}}`+"\n", long)
	out := &lineRecorder{}
	var log syncBuffer
	s := NewServer(newFakeService().services(), Info{}, zerolog.New(&log))
	s.Serve(context.Background(), wire.NewStream(wire.FramingNDJSON, &input, out, nil), ConnOptions{})
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
		cut := len(m.Error.Message) >= wire.MaxErrorMessageBytes
		if err != nil || len(m.Error.Message) > wire.MaxErrorMessageBytes+len("…") || (cut && !strings.HasSuffix(m.Error.Message, "é…")) {
			t.Errorf("a reply of %d bytes, its message %.60q...", len(line), m.Error.Message)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if len(line) > 2*wire.MaxErrorMessageBytes {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
}
