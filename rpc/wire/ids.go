package wire

import (
	"bytes"
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"
)

// ParseID reads a request's id as sourcegraph/jsonrpc2 holds it, or says it
// cannot: an id it could not echo back unchanged (validID).
func ParseID(raw json.RawMessage) (jsonrpc2.ID, bool) {
	var id jsonrpc2.ID
	if !validID(raw) || json.Unmarshal(raw, &id) != nil {
		return jsonrpc2.ID{}, false
	}
	return id, true
}

// validID accepts what sourcegraph/jsonrpc2 can echo back unchanged: a
// string, or an integer from 0 to 2^63-1.
func validID(raw json.RawMessage) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return false
	}
	switch id := v.(type) {
	case string:
		return true
	case json.Number:
		n, err := id.Int64()
		return err == nil && n >= 0
	}
	return false
}

// idKey is an id in a canonical form, to match a response to its request
// however either spelled it.
func idKey(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	switch id := v.(type) {
	case string:
		return "s:" + id
	case json.Number:
		return "n:" + id.String()
	}
	return string(raw)
}
