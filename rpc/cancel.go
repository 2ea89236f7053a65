package rpc

import (
	"context"
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"
)

// inflightCall is a request being handled, which $/cancelRequest can cancel.
type inflightCall struct{ cancel context.CancelFunc }

// begin registers a request that runs in its own goroutine and returns its
// context, and the function to call when it has been answered. Notifications
// cannot be cancelled: they have no id.
func (sess *session) begin(ctx context.Context, req *jsonrpc2.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	if req.Notif {
		return ctx, cancel
	}
	call := &inflightCall{cancel: cancel}
	sess.mu.Lock()
	sess.inflight[req.ID] = call
	sess.mu.Unlock()
	return ctx, func() {
		cancel()
		sess.mu.Lock()
		defer sess.mu.Unlock()
		// A client that reused the id while this ran registered a newer call.
		if sess.inflight[req.ID] == call {
			delete(sess.inflight, req.ID)
		}
	}
}

// cancel cancels the running request with id, if there is one.
func (sess *session) cancel(id jsonrpc2.ID) {
	sess.mu.Lock()
	call := sess.inflight[id]
	sess.mu.Unlock()
	if call != nil {
		call.cancel()
	}
}

// requestID is the id member of $/cancelRequest: a string or an integer,
// as in a request.
type requestID json.RawMessage

func (r *requestID) UnmarshalJSON(data []byte) error {
	*r = append((*r)[:0], data...)
	return nil
}

func (r requestID) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

type cancelParams struct {
	ID requestID `json:"id"`
}

// cancelRequest is LSP's $/cancelRequest, which vscode-jsonrpc sends when a
// caller gives up: the request's context is cancelled, and the request then
// answers request_cancelled (unless it finished first). An id that names no
// running request is ignored, as LSP asks.
func (s *Server) cancelRequest(_ context.Context, sess *session, p cancelParams) (*struct{}, error) {
	raw := json.RawMessage(p.ID)
	if !validID(raw) {
		return nil, &paramError{field: "id", reason: "must be a string or a non-negative integer"}
	}
	var id jsonrpc2.ID
	if err := json.Unmarshal(raw, &id); err != nil {
		return nil, &paramError{field: "id", reason: "must be a string or a non-negative integer"}
	}
	sess.cancel(id)
	return nil, nil
}
