// Package argstest checks a decoder of the args package against
// jsonschema-go's own validator, which the MCP Go SDK runs on tool
// arguments, so that an argument means the same over RPC, as a tool call
// and over MCP.
package argstest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
)

// Resolve resolves a schema for Agree.
func Resolve(t testing.TB, s *jsonschema.Schema) *jsonschema.Resolved {
	t.Helper()
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Agree fails t unless decode and jsonschema-go both accept raw or both
// refuse it, and a refusal by decode is an *args.Error with a reason. The
// differences are the decoder's by design: it reads a null member as left
// out, counts a path's length in bytes, and refuses an integer its Go
// field cannot hold.
func Agree(t testing.TB, schema *jsonschema.Resolved, decode func([]byte) error, raw []byte) {
	t.Helper()
	err := decode(raw)
	var ae *args.Error
	if err != nil && (!errors.As(err, &ae) || ae.Reason == "") {
		t.Fatalf("%q: %v is not an *args.Error with a reason", raw, err)
	}
	var v any = map[string]any{}
	if strings.TrimSpace(string(raw)) != "" && json.Unmarshal(raw, &v) != nil {
		return // not JSON that jsonschema-go can be given
	}
	if v == nil {
		v = map[string]any{}
	}
	verr := schema.Validate(dropNulls(v, schema.Schema()))
	switch {
	case err == nil && verr != nil:
		t.Fatalf("%q: decoded, but jsonschema-go refuses it: %v", raw, verr)
	case err != nil && verr == nil && !byDesign(ae):
		t.Fatalf("%q: refused (%v), but jsonschema-go accepts it", raw, err)
	}
}

func byDesign(e *args.Error) bool {
	what, _, _ := strings.Cut(e.Reason, ";")
	return strings.HasPrefix(what, "is out of range") || strings.HasSuffix(what, " bytes")
}

// dropNulls removes the null members of objects that their schema lists,
// as the decoder reads them as left out; it refuses an unknown member
// whatever its value.
func dropNulls(v any, s *jsonschema.Schema) any {
	switch v := v.(type) {
	case map[string]any:
		for k, m := range v {
			prop := s.Properties[k]
			switch {
			case prop == nil:
			case m == nil:
				delete(v, k)
			default:
				v[k] = dropNulls(m, prop)
			}
		}
	case []any:
		for i, item := range v {
			if s.Items != nil {
				v[i] = dropNulls(item, s.Items)
			}
		}
	}
	return v
}
