package args

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type client struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// sample has a member of every kind the decoder checks.
type sample struct {
	Project   Path              `json:"project" jsonschema:"The project's directory."`
	Count     int               `json:"count,omitzero" jsonschema:"How many."`
	Seconds   float64           `json:"seconds,omitzero"`
	Wait      float64           `json:"wait,omitzero"`
	Direction string            `json:"direction,omitempty"`
	Enabled   bool              `json:"enabled,omitempty"`
	Client    *client           `json:"client,omitempty"`
	Keys      []string          `json:"keys,omitempty"`
	Region    [2]int            `json:"region,omitzero"`
	Raw       json.RawMessage   `json:"raw,omitempty"`
	Text      string            `json:"text,omitempty"`
	ID        json.RawMessage   `json:"id,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

func (sample) TuneSchema(s *jsonschema.Schema) {
	p := s.Properties
	p["count"].Minimum, p["count"].Maximum, p["count"].Default = jsonschema.Ptr(1.0), jsonschema.Ptr(100.0), json.RawMessage("3")
	p["seconds"].Minimum = jsonschema.Ptr(0.0)
	p["wait"].Maximum = jsonschema.Ptr(30.0)
	p["direction"].Enum = []any{"up", "down"}
	p["keys"].MaxItems, p["keys"].Items.Enum = jsonschema.Ptr(2), []any{"ctrl", "shift"}
	p["text"].MinLength, p["text"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(5)
	p["id"].Types, p["id"].Minimum = []string{"string", "integer"}, jsonschema.Ptr(0.0)
	p["env"].AdditionalProperties.MaxLength = jsonschema.Ptr(3)
}

var sampleSpec = For[sample]()

// The seeds of FuzzDecodeAgreesWithValidate, and the errors they make.
var decodeCases = []struct {
	raw, field, reason string // field and reason "" for no error
}{
	{`{"project": "/p"}`, "", ""},
	{`{"project": "/p", "count": 7, "seconds": 0.5, "wait": 30, "direction": "up", "enabled": true, "client": {"name": "a", "version": "1"}, "keys": ["ctrl"], "region": [1, 2], "raw": [1, {"a": null}], "text": "héllo", "id": "x"}`, "", ""},
	{`{"project": "/p", "count": null, "client": null, "keys": null, "raw": null}`, "", ""},
	{`{"project": "/p", "count": 1.0, "id": 5}`, "", ""},
	{`{"project": "/p", "count": 1e2}`, "", ""},
	{`  null `, "project", "is required"},
	{``, "project", "is required"},
	{`{"project": null}`, "project", "is required"},
	{`{"count": 3}`, "project", "is required"},
	{`[1, 2]`, "", "must be an object"},
	{`"/p"`, "", "must be an object"},
	{`{"project": 42}`, "project", "must be a string; got 42"},
	{`{"project": "/p", "extra": 1}`, "extra", "is not a known field; the fields are project, count, seconds, wait, direction, enabled, client, keys, region, raw, text, id, env"},
	{`{"project": "/p", "": 1}`, `""`, "is not a known field; the fields are project, count, seconds, wait, direction, enabled, client, keys, region, raw, text, id, env"},
	{`{"project": "/p", "count": 0}`, "count", "must be from 1 to 100; got 0"},
	{`{"project": "/p", "count": 101}`, "count", "must be from 1 to 100; got 101"},
	{`{"project": "/p", "count": 1.5}`, "count", "must be an integer; got 1.5"},
	{`{"project": "/p", "count": "5"}`, "count", `must be an integer; got "5"`},
	{`{"project": "/p", "count": 1e300}`, "count", "must be from 1 to 100; got 1e300"},
	{`{"project": "/p", "seconds": -1}`, "seconds", "must be at least 0; got -1"},
	{`{"project": "/p", "wait": 31}`, "wait", "must be at most 30; got 31"},
	{`{"project": "/p", "wait": true}`, "wait", "must be a number; got true"},
	{`{"project": "/p", "direction": "sideways"}`, "direction", `must be one of up, down; got "sideways"`},
	{`{"project": "/p", "enabled": "yes"}`, "enabled", `must be a boolean; got "yes"`},
	{`{"project": "/p", "client": {"name": "a"}}`, "client.version", "is required"},
	{`{"project": "/p", "client": {"name": "a", "version": 1}}`, "client.version", "must be a string; got 1"},
	{`{"project": "/p", "client": {"name": "a", "version": "1", "x": 2}}`, "client.x", "is not a known field; the fields are name, version"},
	{`{"project": "/p", "client": "a"}`, "client", `must be an object; got "a"`},
	{`{"project": "/p", "keys": ["ctrl", "alt"]}`, "keys[1]", `must be one of ctrl, shift; got "alt"`},
	{`{"project": "/p", "keys": ["ctrl", null]}`, "keys[1]", "must be a string; got null"},
	{`{"project": "/p", "keys": ["ctrl", "ctrl", "ctrl"]}`, "keys", "must have at most 2 items; got 3"},
	{`{"project": "/p", "region": [1]}`, "region", "must have exactly 2 items; got 1"},
	{`{"project": "/p", "text": ""}`, "text", "must not be empty"},
	{`{"project": "/p", "text": "ab中文ef"}`, "text", "must be at most 5 characters; got 6"},
	{`{"project": "/p", "env": {"A": "x", "b c": "", "\u00e9\n": "yz"}}`, "", ""},
	{`{"project": "/p", "env": {"B": "x", "A": 1}}`, "env.A", "must be a string; got 1"},
	{`{"project": "/p", "env": {"A": null}}`, "env.A", "must be a string; got null"},
	{`{"project": "/p", "env": {"A": "long"}}`, "env.A", "must be at most 3 characters; got 4"},
	{`{"project": "/p", "env": ["A"]}`, "env", `must be an object; got ["A"]`},
	{`{"project": "/p", "id": -1}`, "id", "must be at least 0; got -1"},
	{`{"project": "/p", "id": {"x": 1}}`, "id", `must be a string or an integer; got {"x": 1}`},
	{`{"project": "` + strings.Repeat("p", MaxPathBytes+1) + `"}`, "project", "must be at most 4096 bytes; got 4097"},
	{`{"project": "` + strings.Repeat("é", MaxPathBytes/2+1) + `"}`, "project", "must be at most 4096 bytes; got 4098"},
	{`{"project": "/p", "text": "` + strings.Repeat("x", 100) + `", "count": "` + strings.Repeat("é", 30) + `"}`, "count", `must be an integer; got "ééééééééééééééééééé…`},
}

func TestDecodeIsStrictAndNamesTheField(t *testing.T) {
	for _, tc := range decodeCases {
		_, err := sampleSpec.Decode([]byte(tc.raw))
		var ae *Error
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%.60s: unexpected error %v", tc.raw, err)
		case tc.reason != "" && (!errors.As(err, &ae) || ae.Field != tc.field || ae.Reason != tc.reason):
			t.Errorf("%.60s:\n  got  %#v\n  want field %q, reason %q", tc.raw, err, tc.field, tc.reason)
		}
	}
}

func TestDecodeFillsDefaultsAndReadsNullAsLeftOut(t *testing.T) {
	got, err := sampleSpec.Decode([]byte(`{"project": "/p", "client": null, "count": null, "region": [3, 4], "raw": {"a": null}}`))
	want := sample{Project: "/p", Count: 3, Region: [2]int{3, 4}, Raw: json.RawMessage(`{"a": null}`)}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}
	got, err = sampleSpec.Decode([]byte(`{"project": "/p", "count": 2.0e1, "id": 7}`))
	if err != nil || got.Count != 20 || string(got.ID) != "7" {
		t.Errorf("an integer written as 2.0e1: %+v, %v", got, err)
	}
}

func TestMissingRequiredMemberCarriesItsDescription(t *testing.T) {
	_, err := sampleSpec.Decode([]byte(`{}`))
	var ae *Error
	if !errors.As(err, &ae) || ae.Description != "The project's directory." {
		t.Errorf("err = %#v", err)
	}
}

func TestIntegersBeyondGoAreOutOfRange(t *testing.T) {
	type big struct {
		N int64 `json:"n"`
	}
	for _, raw := range []string{`{"n": 1e300}`, `{"n": 9223372036854775808}`, `{"n": -1e19}`} {
		_, err := For[big]().Decode([]byte(raw))
		var ae *Error
		if !errors.As(err, &ae) || ae.Field != "n" || !strings.HasPrefix(ae.Reason, "is out of range; got ") {
			t.Errorf("%s: %#v", raw, err)
		}
	}
	if v, err := For[big]().Decode([]byte(`{"n": 9223372036854775807}`)); err != nil || v.N != 1<<63-1 {
		t.Errorf("the largest int64: %v, %v", v, err)
	}
}

func TestSchemaSaysWhatTheDecoderDoes(t *testing.T) {
	got, err := json.Marshal(sampleSpec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"project":{"type":"string","description":"The project's directory.","maxLength":4096,"format":"path"}`,
		`"count":{"type":"integer","description":"How many.","default":3,"minimum":1,"maximum":100}`,
		`"client":{"type":"object","properties":{"name":{"type":"string"},"version":{"type":"string"}},"required":["name","version"],"additionalProperties":false}`,
		`"keys":{"type":"array","items":{"type":"string","enum":["ctrl","shift"]},"maxItems":2}`,
		`"raw":true`,
		`"required":["project"]`,
		`"additionalProperties":false`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("schema lacks %s:\n%s", want, got)
		}
	}
	empty, _ := json.Marshal(For[struct{}]().Schema())
	if string(empty) != `{"type":"object","properties":{},"additionalProperties":false}` {
		t.Errorf("a struct without members: %s", empty)
	}
}

type withPattern struct {
	S string `json:"s"`
}

func (withPattern) TuneSchema(s *jsonschema.Schema) { s.Properties["s"].Pattern = "^a" }

type withBadDefault struct {
	N int `json:"n,omitzero"`
}

func (withBadDefault) TuneSchema(s *jsonschema.Schema) {
	s.Properties["n"].Maximum, s.Properties["n"].Default = jsonschema.Ptr(5.0), json.RawMessage("9")
}

func TestWhatTheDecoderCannotCheckIsRefused(t *testing.T) {
	for name, build := range map[string]func(){
		"a pattern":        func() { For[withPattern]() },
		"a bad default":    func() { For[withBadDefault]() },
		"not a struct":     func() { For[[]int]() },
		"an unknown field": func() { For[struct{ C chan int }]() },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: For did not refuse it", name)
				}
			}()
			build()
		}()
	}
}

type tunedByPointer struct {
	N int `json:"n"`
}

func (*tunedByPointer) TuneSchema(s *jsonschema.Schema) {
	s.Properties["n"].Maximum = jsonschema.Ptr(9.0)
}

func TestTuneSchemaOnAPointerIsApplied(t *testing.T) {
	_, err := For[tunedByPointer]().Decode([]byte(`{"n": 10}`))
	var ae *Error
	if !errors.As(err, &ae) || ae.Reason != "must be at most 9; got 10" {
		t.Errorf("err = %v", err)
	}
}
