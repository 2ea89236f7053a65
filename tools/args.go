package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// kind is the JSON type of an argument.
type kind int

const (
	kindInteger kind = iota
	kindNumber
	kindString
)

// param describes one argument of a tool. The same description produces the
// tool's JSON Schema and checks the arguments of a call, so the two cannot
// disagree.
type param struct {
	name     string
	kind     kind
	desc     string
	required bool
	// min and max bound numbers (inclusive); for strings they bound the
	// length in characters. NaN means unbounded.
	min, max float64
	enum     []string
	def      any // the default of an optional argument
}

func integer(name, desc string, min, max float64) param {
	return param{name: name, kind: kindInteger, desc: desc, required: true, min: min, max: max}
}

func text(name, desc string, min, max int) param {
	return param{name: name, kind: kindString, desc: desc, required: true, min: float64(min), max: float64(max)}
}

// optional makes a parameter optional with a default, held as the type a
// parsed value of its kind has.
func (p param) optional(def float64) param {
	p.required, p.def = false, def
	if p.kind == kindInteger {
		p.def = int64(def)
	}
	return p
}

// schema is the parameters' JSON Schema: an object with exactly these
// properties.
func schema(params []param) json.RawMessage {
	props := map[string]any{}
	required := []string{}
	for _, p := range params {
		prop := map[string]any{"description": p.desc}
		switch p.kind {
		case kindInteger:
			prop["type"] = "integer"
		case kindNumber:
			prop["type"] = "number"
		case kindString:
			prop["type"] = "string"
		}
		if p.kind == kindString {
			if !math.IsNaN(p.min) && p.min > 0 {
				prop["minLength"] = int(p.min)
			}
			if !math.IsNaN(p.max) {
				prop["maxLength"] = int(p.max)
			}
		} else {
			if !math.IsNaN(p.min) {
				prop["minimum"] = p.min
			}
			if !math.IsNaN(p.max) {
				prop["maximum"] = p.max
			}
		}
		if p.enum != nil {
			prop["enum"] = p.enum
		}
		if p.def != nil {
			prop["default"] = p.def
		}
		props[p.name] = prop
		if p.required {
			required = append(required, p.name)
		}
	}
	out, _ := json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	})
	return out
}

// args are a call's checked arguments: int64, float64 or string values.
type args map[string]any

func (a args) int(name string) int       { return int(a[name].(int64)) }
func (a args) float(name string) float64 { return a[name].(float64) }
func (a args) string(name string) string { return a[name].(string) }
func (a args) has(name string) bool      { _, ok := a[name]; return ok }

// argError is an argument a model must correct; the message names it.
type argError struct {
	name string
	msg  string
}

func (e *argError) Error() string { return fmt.Sprintf("argument %q %s", e.name, e.msg) }

// parseArgs checks raw arguments against params: no unknown ones, every
// required one present, each of its type and in its range. Defaults fill in
// the optional ones left out.
func parseArgs(params []param, raw json.RawMessage) (args, error) {
	var members map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return nil, &argError{name: "arguments", msg: "must be a JSON object"}
	}
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.name
	}
	for _, k := range sortedKeys(members) {
		if !slices.Contains(names, k) {
			takes := "no arguments"
			if len(names) > 0 {
				takes = "the arguments " + strings.Join(names, ", ")
			}
			return nil, &argError{name: k, msg: "is not an argument of this tool, which takes " + takes}
		}
	}
	out := args{}
	for _, p := range params {
		v, ok := members[p.name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if p.required {
				return nil, &argError{name: p.name, msg: "is required: " + p.desc}
			}
			out[p.name] = p.def
			continue
		}
		val, err := p.parse(v)
		if err != nil {
			return nil, err
		}
		out[p.name] = val
	}
	return out, nil
}

func (p param) parse(raw json.RawMessage) (any, error) {
	switch p.kind {
	case kindString:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, &argError{name: p.name, msg: "must be a string, got " + abbreviate(raw)}
		}
		n := utf8.RuneCountInString(s)
		if !math.IsNaN(p.min) && n < int(p.min) {
			if p.min == 1 {
				return nil, &argError{name: p.name, msg: "must not be empty"}
			}
			return nil, &argError{name: p.name, msg: fmt.Sprintf("must be at least %d characters", int(p.min))}
		}
		if !math.IsNaN(p.max) && n > int(p.max) {
			return nil, &argError{name: p.name, msg: fmt.Sprintf("must be at most %d characters; got %d", int(p.max), n)}
		}
		if p.enum != nil && !slices.Contains(p.enum, s) {
			return nil, &argError{name: p.name, msg: fmt.Sprintf("must be one of %s; got %q", strings.Join(p.enum, ", "), s)}
		}
		return s, nil
	default:
		var f float64
		if raw[0] == '"' || json.Unmarshal(raw, &f) != nil {
			return nil, &argError{name: p.name, msg: "must be a " + p.kindName() + ", got " + abbreviate(raw)}
		}
		if p.kind == kindInteger && f != math.Trunc(f) {
			return nil, &argError{name: p.name, msg: "must be a whole number, got " + abbreviate(raw)}
		}
		if (!math.IsNaN(p.min) && f < p.min) || (!math.IsNaN(p.max) && f > p.max) {
			return nil, &argError{name: p.name, msg: fmt.Sprintf("must be from %s to %s; got %s", num(p.min), num(p.max), abbreviate(raw))}
		}
		if p.kind == kindInteger {
			return int64(f), nil
		}
		return f, nil
	}
}

func (p param) kindName() string {
	if p.kind == kindInteger {
		return "whole number"
	}
	return "number"
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func abbreviate(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
