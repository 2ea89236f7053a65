package rpc

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
)

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
	id, ok := wire.ParseID(p.ID)
	if !ok {
		return nil, &args.Error{Field: "id", Reason: "must be a string or a non-negative integer"}
	}
	sess.conn.Cancel(id)
	return nil, nil
}
