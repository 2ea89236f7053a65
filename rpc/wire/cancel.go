package wire

import (
	"context"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// inflight is the requests running, by id, which Cancel can cancel:
// jsonrpc2 has no cancellation of its own.
type inflight struct {
	mu   sync.Mutex // guards byID
	byID map[jsonrpc2.ID]*inflightCall
}

// inflightCall is a request being handled.
type inflightCall struct{ cancel context.CancelFunc }

func newInflight() *inflight { return &inflight{byID: map[jsonrpc2.ID]*inflightCall{}} }

// Begin registers a request that runs in its own goroutine and returns its
// context, and the function to call when it has been answered.
// Notifications cannot be cancelled: they have no id.
func (c *Conn) Begin(ctx context.Context, req *jsonrpc2.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	if req.Notif {
		return ctx, cancel
	}
	call := &inflightCall{cancel: cancel}
	in := c.calls
	in.mu.Lock()
	in.byID[req.ID] = call
	in.mu.Unlock()
	return ctx, func() {
		cancel()
		in.mu.Lock()
		defer in.mu.Unlock()
		// A client that reused the id while this ran registered a newer call.
		if in.byID[req.ID] == call {
			delete(in.byID, req.ID)
		}
	}
}

// Cancel cancels the running request with id, if there is one.
func (c *Conn) Cancel(id jsonrpc2.ID) {
	c.calls.mu.Lock()
	call := c.calls.byID[id]
	c.calls.mu.Unlock()
	if call != nil {
		call.cancel()
	}
}
