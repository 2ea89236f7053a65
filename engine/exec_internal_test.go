package engine

import (
	"context"
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
		end, err := waitStream(context.Background(), stream, time.Hour, finished)
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
