package rpc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/args"
)

// TestDecodeParamsIsStrict checks what a client sees of a params struct's
// strict decoding: invalid_params, with data.field naming the field.
func TestDecodeParamsIsStrict(t *testing.T) {
	type inner struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	type params struct {
		ProjectPath args.Path `json:"projectPath"`
		TimeoutMs   *int64    `json:"timeoutMs,omitempty"`
		Workdir     string    `json:"workdir,omitempty"`
		Enabled     bool      `json:"enabled"`
		Client      *inner    `json:"clientInfo,omitempty"`
	}
	spec := args.For[params]()
	for _, tc := range []struct {
		raw   string
		field string // "" means no error
	}{
		{`{"projectPath": "/p", "enabled": true}`, ""},
		{`{"projectPath": "/p", "enabled": false, "timeoutMs": 5, "workdir": "/w", "clientInfo": {"name": "a", "version": "1"}}`, ""},
		{`{"projectPath": "/p", "enabled": true, "timeoutMs": null}`, ""},
		{`{"enabled": true}`, "projectPath"},
		{`{"projectPath": null, "enabled": true}`, "projectPath"},
		{`{"projectPath": 5, "enabled": true}`, "projectPath"},
		{`{"projectPath": "/p", "enabled": "yes"}`, "enabled"},
		{`{"projectPath": "/p", "enabled": true, "timeoutMs": 1.5}`, "timeoutMs"},
		{`{"projectPath": "/p", "enabled": true, "timeoutMs": "5"}`, "timeoutMs"},
		{`{"projectPath": "/p", "enabled": true, "extra": 1}`, "extra"},
		{`{"projectPath": "/p", "enabled": true, "clientInfo": {"name": "a"}}`, "clientInfo.version"},
		{`{"projectPath": "/p", "enabled": true, "clientInfo": {"name": "a", "version": "1", "x": 2}}`, "clientInfo.x"},
		{`{"projectPath": "/p", "enabled": true, "clientInfo": "a"}`, "clientInfo"},
		{`["/p", true]`, "params"},
		{`"/p"`, "params"},
	} {
		_, err := spec.Decode([]byte(tc.raw))
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.raw, err)
		case tc.field != "" && fieldOf(t, err) != tc.field:
			t.Errorf("%s: err = %v, want one naming %q", tc.raw, err, tc.field)
		}
	}
}

// fieldOf is the data.field a client is sent for err.
func fieldOf(t *testing.T, err error) string {
	if err == nil {
		return ""
	}
	wire := toWire(err)
	var data errorData
	if wire.Code != codeInvalidParams || json.Unmarshal(*wire.Data, &data) != nil {
		t.Errorf("%v is sent as %+v", err, wire)
	}
	return data.Field
}

func TestAbsentParamsReadAsEmptyObject(t *testing.T) {
	if _, err := args.For[noParams]().Decode(nil); err != nil {
		t.Errorf("absent: %v", err)
	}
	if _, err := args.For[noParams]().Decode([]byte("null")); err != nil {
		t.Errorf("null: %v", err)
	}
	if _, err := args.For[projectParams]().Decode(nil); fieldOf(t, err) != "projectPath" {
		t.Errorf("absent params with a required member: %v", err)
	}
}

// TestLongPathIsRefusedBriefly: a huge projectPath (issue 16: 30 MB made a
// 63 MB reply, the path quoted in it twice) is refused by its length, in a
// reply that does not repeat it.
func TestLongPathIsRefusedBriefly(t *testing.T) {
	s := newTestServer(newFakeService(), Info{}, zerolog.Nop())
	raw := `{"projectPath": "/` + strings.Repeat("p", 30<<20) + `"}`
	for _, name := range []string{"sandbox/start", "sandbox/exec"} {
		_, err := s.methods[name].decode([]byte(raw))
		wire := toWire(err)
		if fieldOf(t, err) != "projectPath" || len(wire.Message) > 100 {
			t.Errorf("%s: %.200v", name, wire)
		}
	}
}
