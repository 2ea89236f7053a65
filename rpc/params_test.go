package rpc

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecodeParamsIsStrict(t *testing.T) {
	type inner struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	type params struct {
		ProjectPath string `json:"projectPath"`
		TimeoutMs   *int64 `json:"timeoutMs"`
		Workdir     string `json:"workdir,omitempty"`
		Enabled     bool   `json:"enabled"`
		Client      *inner `json:"clientInfo"`
	}
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
		var p params
		raw := json.RawMessage(tc.raw)
		err := decodeParams(&raw, &p)
		var pe *paramError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.raw, err)
		case tc.field != "" && (!errors.As(err, &pe) || pe.field != tc.field):
			t.Errorf("%s: err = %v, want one naming %q", tc.raw, err, tc.field)
		}
	}
}

func TestAbsentParamsReadAsEmptyObject(t *testing.T) {
	var p struct{}
	if err := decodeParams(nil, &p); err != nil {
		t.Errorf("absent: %v", err)
	}
	null := json.RawMessage("null")
	if err := decodeParams(&null, &p); err != nil {
		t.Errorf("null: %v", err)
	}
	var q projectParams
	var pe *paramError
	if err := decodeParams(nil, &q); !errors.As(err, &pe) || pe.field != "projectPath" {
		t.Errorf("absent params with a required member: %v", err)
	}
}
