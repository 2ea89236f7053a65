package args

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// typeMatches says whether raw, a JSON value, is of a type s allows. An
// integer is a number without a fraction, however it is written (1, 1.0,
// 1e2), as JSON Schema has it.
func typeMatches(raw []byte, s *jsonschema.Schema) bool {
	switch raw[0] {
	case '{':
		return allowsType(s, "object")
	case '[':
		return allowsType(s, "array")
	case '"':
		return allowsType(s, "string")
	case 't', 'f':
		return allowsType(s, "boolean")
	case 'n':
		return allowsType(s, "null")
	}
	if allowsType(s, "number") {
		return true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return allowsType(s, "integer") && (err != nil || f == math.Trunc(f))
}

func allowsType(s *jsonschema.Schema, t string) bool {
	return s.Type == t || slices.Contains(s.Types, t)
}

// typeNames names the types s allows as a reader says them: "a string or
// an integer".
func typeNames(s *jsonschema.Schema) string {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = "a " + t
		if t == "integer" || t == "object" || t == "array" {
			names[i] = "an " + t
		}
	}
	return strings.Join(names, " or ")
}

func isNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// join names a member of the object field names ("" is the root).
func join(field, name string) string {
	if field == "" {
		return name
	}
	return field + "." + name
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// abbreviate quotes a value given, short enough for an error message.
func abbreviate(raw []byte) string {
	const limit = 40
	s := string(bytes.TrimSpace(raw))
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
