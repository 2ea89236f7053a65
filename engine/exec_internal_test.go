package engine

import (
	"context"
	"io"
	"testing"
	"time"
)

// heldStream is an exec stream a background child keeps open: Wait
// returns only once it is closed.
type heldStream struct{ closed chan struct{} }

func (h *heldStream) Wait() error  { <-h.closed; return nil }
func (h *heldStream) Close() error { close(h.closed); return nil }

func TestWaitStreamStopsReadingOnceFinished(t *testing.T) {
	stream := &heldStream{closed: make(chan struct{})}
	finished := make(chan struct{})
	close(finished)
	returned := make(chan bool, 1)
	go func() {
		end, err := waitStream(context.Background(), stream, time.Hour, finished, func() {})
		returned <- end == streamFinished && err == nil
	}()
	select {
	case ok := <-returned:
		if !ok {
			t.Error("waitStream reported another end, or an error")
		}
	case <-time.After(30 * time.Second): // a guard against hanging, not a measure
		t.Fatal("waitStream went on reading a finished command's stream")
	}
	select {
	case <-stream.closed:
	default:
		t.Error("the stream was left open")
	}
}

// TestInputIsCutWhenTheExecEnds: an input that never ends (a terminal,
// an open pipe) ends for the exec's stream once cut, as the library's
// stream waits for it.
func TestInputIsCutWhenTheExecEnds(t *testing.T) {
	never, _ := io.Pipe() // nothing is ever written to it
	in, cut := inputUntilCut(never)
	read := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, in); read <- err }()
	cut()
	select {
	case <-read:
	case <-time.After(30 * time.Second): // a guard against hanging, not a measure
		t.Fatal("the input went on after the cut")
	}
	if in, _ := inputUntilCut(nil); in != nil {
		t.Error("no input became one")
	}
}
