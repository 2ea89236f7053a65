package rpc

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/pilot-sandbox/pilot-sandbox/args"
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

type cancelParams struct {
	ID json.RawMessage `json:"id" jsonschema:"The id of the request to cancel."`
}

// TuneSchema says what an id is: a string or an integer, as in a request.
func (cancelParams) TuneSchema(s *jsonschema.Schema) {
	id := s.Properties["id"]
	id.Types, id.Minimum = []string{"string", "integer"}, jsonschema.Ptr(0.0)
}

// cancelRequest is LSP's $/cancelRequest, which vscode-jsonrpc sends when a
// caller gives up: the request's context is cancelled, and the request then
// answers request_cancelled (unless it finished first). An id that names no
// running request is ignored, as LSP asks.
func (s *Server) cancelRequest(_ context.Context, sess *session, p cancelParams) (*struct{}, error) {
	var id jsonrpc2.ID
	if !validID(p.ID) || json.Unmarshal(p.ID, &id) != nil {
		return nil, &args.Error{Field: "id", Reason: "must be a string or a non-negative integer"}
	}
	sess.cancel(id)
	return nil, nil
}
