package wire

import (
	"context"
	"sync"
)

// Limits on the calls a connection runs at once (docs/protocol.md,
// Limits). Past either, the next message is read when a call ends: a
// client cannot have goroutines, and the requests they hold, pile up by
// sending faster than calls end.
const (
	// MaxRunningCalls bounds the calls running.
	MaxRunningCalls = 256
	// maxRunningBytes bounds the params the calls running hold between
	// them: four messages of the largest size. A call larger than this
	// still runs, alone.
	maxRunningBytes = 4 * MaxFrameBytes
)

// callLimits are the bounds on the calls one connection runs at once.
type callLimits struct {
	calls int
	bytes int64
}

var defaultCallLimits = callLimits{MaxRunningCalls, maxRunningBytes}

// admission counts the calls a connection runs, and the size of their
// params, within limits.
type admission struct {
	limits callLimits

	mu      sync.Mutex // guards the fields below
	calls   int
	bytes   int64
	waiting int           // enter calls waiting for room
	changed chan struct{} // closed, and replaced, when a call ends
}

func newAdmission(limits callLimits) *admission {
	return &admission{limits: limits, changed: make(chan struct{})}
}

// enter waits until a call of size bytes fits, and counts it; it gives up
// when ctx ends.
func (a *admission) enter(ctx context.Context, size int64) bool {
	for {
		a.mu.Lock()
		if a.calls == 0 || (a.calls < a.limits.calls && a.bytes+size <= a.limits.bytes) {
			a.calls++
			a.bytes += size
			a.mu.Unlock()
			return true
		}
		changed := a.changed
		a.waiting++
		a.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		}
		a.mu.Lock()
		a.waiting--
		a.mu.Unlock()
		if ctx.Err() != nil {
			return false
		}
	}
}

// waitingCalls counts the enter calls waiting for room.
func (a *admission) waitingCalls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting
}

// leave counts a call of size bytes out.
func (a *admission) leave(size int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls--
	a.bytes -= size
	close(a.changed)
	a.changed = make(chan struct{})
}
