package wire

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Limits on what waits for a client to read it (docs/protocol.md, Limits).
const (
	// maxQueuedBytes bounds the frames a connection holds for its client:
	// replies and notifications written and not yet taken. A frame larger
	// than this still goes, alone.
	maxQueuedBytes = 16 << 20
	// stallTimeout is how long the client may leave a frame untaken before
	// the connection is closed. It matches the WebSocket write timeout.
	stallTimeout = 30 * time.Second
)

var (
	// errStreamClosed ends an outbox whose stream was closed.
	errStreamClosed = errors.New("the connection is closed")
	// errOutboxEnded wraps why, for a caller that found the outbox ended.
	errOutboxEnded = errors.New("nothing more can be sent")
)

// outbox is a connection's outgoing queue, which one goroutine writes. It
// holds at most maxQueuedBytes: a caller with more to send waits for room,
// so a client that reads nothing fills it once and then holds up the
// server instead of making it buffer. A frame the client has not taken
// after stall ends the outbox, and the connection with it.
type outbox struct {
	write func(frame []byte) error
	stall time.Duration
	// ended is called once, with the reason, when a write fails or stalls.
	ended func(error)

	mu     sync.Mutex // guards the fields below
	room   *sync.Cond // signalled when frames are taken, or the outbox ends
	queue  [][]byte
	queued int   // bytes in queue, and of the frame being written
	err    error // why the outbox ended; nothing is queued or written after
}

func newOutbox(write func([]byte) error, stall time.Duration, ended func(error)) *outbox {
	o := &outbox{write: write, stall: stall, ended: ended}
	o.room = sync.NewCond(&o.mu)
	return o
}

// put queues a frame, waiting while the outbox is full. The error is the
// reason the outbox ended.
func (o *outbox) put(frame []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.err == nil && o.queued > 0 && o.queued+len(frame) > maxQueuedBytes {
		o.room.Wait()
	}
	if o.err != nil {
		return o.failure()
	}
	o.queue = append(o.queue, frame)
	o.queued += len(frame)
	o.room.Broadcast()
	return nil
}

// waitRoom waits until the outbox is not full.
func (o *outbox) waitRoom() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.err == nil && o.queued >= maxQueuedBytes {
		o.room.Wait()
	}
	return o.failure()
}

// drain waits until every frame queued has been written.
func (o *outbox) drain() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.err == nil && o.queued > 0 {
		o.room.Wait()
	}
	return o.failure()
}

// failure is what a caller gets from an outbox that ended: nil while it
// has not.
func (o *outbox) failure() error {
	if o.err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", errOutboxEnded, o.err)
}

// run writes frames in order until the outbox ends. A write that has not
// returned when the outbox ends is left to the transport: the WebSocket's
// close ends it, a stdio write ends with the process.
func (o *outbox) run() {
	for {
		frame, ok := o.next()
		if !ok {
			return
		}
		stalled := time.AfterFunc(o.stall, func() {
			o.end(fmt.Errorf("the client stopped reading: a reply waited %s to be taken", o.stall))
		})
		err := o.write(frame)
		stalled.Stop()
		o.taken(len(frame))
		if err != nil {
			o.end(fmt.Errorf("write: %w", err))
		}
	}
}

// next waits for the next frame to write.
func (o *outbox) next() ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.err == nil && len(o.queue) == 0 {
		o.room.Wait()
	}
	if o.err != nil {
		return nil, false
	}
	frame := o.queue[0]
	o.queue[0] = nil
	o.queue = o.queue[1:]
	return frame, true
}

// taken counts a frame written.
func (o *outbox) taken(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil { // end has already emptied the count
		o.queued -= n
		o.room.Broadcast()
	}
}

// end ends the outbox: what is queued is dropped, and every caller
// waiting gets err. Only the first end counts; it is reported to ended
// unless the stream was closed.
func (o *outbox) end(err error) {
	o.mu.Lock()
	if o.err != nil {
		o.mu.Unlock()
		return
	}
	o.err = err
	o.queue = nil
	o.queued = 0
	o.room.Broadcast()
	o.mu.Unlock()
	if err != errStreamClosed && o.ended != nil {
		o.ended(err)
	}
}
