// Package args is the one path for arguments: the params of every JSON-RPC
// method and the arguments of every agent tool are a Go struct, its JSON
// Schema is inferred from the struct, and a call's JSON is decoded strictly
// against that schema, with the member at fault named in the error.
//
// Schemas are inferred by github.com/google/jsonschema-go, the library the
// official MCP Go SDK infers and validates tool input schemas with, so the
// RPC server, the agent tools and an MCP server describe an argument the
// same way. What a struct tag cannot say (bounds, enums, defaults) the
// struct's TuneSchema method sets on the inferred schema.
//
// The package knows nothing of RPC, tools or Docker.
package args

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxPathBytes bounds every Path: the longest path Linux resolves
// (PATH_MAX), and a bound on what a request can make the sidecar hold.
const MaxPathBytes = 4096

// Path is a string member that names a file or directory. Its schema has
// "format": "path" and a maxLength of MaxPathBytes, which the decoder
// counts in bytes, as the operating system does.
type Path string

// pathFormat marks a Path's schema.
const pathFormat = "path"

// Tuner is an arguments struct whose schema needs more than its tags say:
// TuneSchema sets bounds, enums and defaults on the schema inferred from
// it, in one place next to the struct.
type Tuner interface {
	TuneSchema(s *jsonschema.Schema)
}

// Spec is the schema of the arguments struct T, and its strict decoder.
type Spec[T any] struct {
	schema *jsonschema.Schema
}

// For returns T's spec. A T the decoder cannot check in full (not a struct,
// a keyword the decoder does not enforce, a default its own schema refuses)
// is a programming error, and panics.
func For[T any]() *Spec[T] {
	s, err := schemaFor[T]()
	if err != nil {
		panic(fmt.Sprintf("args.For[%v]: %v", reflect.TypeFor[T](), err))
	}
	return &Spec[T]{schema: s}
}

// Schema is T's JSON Schema. It is shared: callers must not change it.
func (s *Spec[T]) Schema() *jsonschema.Schema { return s.schema }

// Decode reads raw (a JSON object; empty or null reads as {}) into a T:
// an unknown member, a required one missing, a value of the wrong type or
// out of its bounds is an *Error naming the member. A null member reads as
// left out; a member left out takes its schema's default.
func (s *Spec[T]) Decode(raw []byte) (T, error) {
	var v T
	checked, err := checkRoot(raw, s.schema)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(checked, &v); err != nil {
		return v, goTypeError(err)
	}
	return v, nil
}

// Error is a member of the arguments that is missing, unknown, of the wrong
// type or out of its bounds. Its text is the same wherever the arguments
// came from (an RPC client, a model, an MCP host).
type Error struct {
	// Field is the member at fault as a path ("clientInfo.version",
	// "modifiers[1]"); "" is the arguments as a whole.
	Field string
	// Reason says what is wrong and, where it helps, what was given:
	// "is required", "must be from 1 to 100; got 0".
	Reason string
	// Description is the schema's description of a required member that
	// was left out, for a reader who has not seen the schema.
	Description string
}

func (e *Error) Error() string { return cmp.Or(e.Field, "arguments") + ": " + e.Reason }

// goTypeError explains a value the schema allows but the Go field cannot
// hold: an integer beyond int64.
func goTypeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if got, ok := strings.CutPrefix(te.Value, "number "); ok {
			return &Error{Field: te.Field, Reason: "is out of range; got " + got}
		}
	}
	return fmt.Errorf("decode checked arguments: %w", err)
}
