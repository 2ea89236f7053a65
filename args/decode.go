package args

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// The checks below enforce the keywords supported lets a schema use, in
// the order a reader fixes them: unknown members, missing ones, then each
// member's type and bounds. Each returns the value as the Go decoder should
// read it: defaults filled in, null members dropped, integers written as
// integers.

// checkRoot checks the arguments as a whole: absent or null is {}.
func checkRoot(raw []byte, s *jsonschema.Schema) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		raw = []byte("{}")
	}
	out, err := check(raw, s, "")
	var whole *Error
	if errors.As(err, &whole) && whole.Field == "" {
		// Not an object (or not JSON): what was given is the request
		// itself, too long to quote.
		return nil, &Error{Reason: "must be an object"}
	}
	return out, err
}

// check checks one value against its schema. A schema without a type is a
// raw member: any value will do, for whoever reads it to check.
func check(raw []byte, s *jsonschema.Schema, field string) ([]byte, error) {
	if s.Type == "" && s.Types == nil {
		return raw, nil
	}
	if !typeMatches(raw, s) {
		return nil, &Error{Field: field, Reason: "must be " + typeNames(s) + "; got " + abbreviate(raw)}
	}
	var (
		out []byte
		err error
	)
	switch raw[0] {
	case '{':
		out, err = checkObject(raw, s, field)
	case '[':
		out, err = checkArray(raw, s, field)
	case '"':
		out, err = raw, checkString(raw, s, field)
	case 't', 'f', 'n':
		out = raw
	default:
		out, err = checkNumber(raw, s, field)
	}
	if err == nil {
		err = checkEnum(raw, s, field)
	}
	return out, err
}

func checkObject(raw []byte, s *jsonschema.Schema, field string) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, &Error{Field: field, Reason: "must be an object; got " + abbreviate(raw)}
	}
	if isMap(s) {
		return checkMap(members, s.AdditionalProperties, field)
	}
	if err := checkUnknown(members, s, field); err != nil {
		return nil, err
	}
	var out object
	for _, name := range s.PropertyOrder {
		prop, v := s.Properties[name], members[name]
		if v != nil && !isNull(v) {
			checked, err := check(v, prop, join(field, name))
			if err != nil {
				return nil, err
			}
			out.add(name, checked)
			continue
		}
		switch {
		case slices.Contains(s.Required, name):
			return nil, &Error{Field: join(field, name), Reason: "is required", Description: prop.Description}
		case prop.Default != nil:
			out.add(name, prop.Default)
		}
	}
	return out.close(), nil
}

// checkMap checks a map's members, in name order, against their schema.
func checkMap(members map[string]json.RawMessage, s *jsonschema.Schema, field string) ([]byte, error) {
	var out object
	for _, name := range slices.Sorted(maps.Keys(members)) {
		checked, err := check(members[name], s, join(field, name))
		if err != nil {
			return nil, err
		}
		out.add(name, checked)
	}
	return out.close(), nil
}

// object writes a checked object's members as JSON, as they come.
type object struct{ buf []byte }

// add writes a member, its name quoted as JSON quotes it.
func (o *object) add(name string, value []byte) {
	if o.buf == nil {
		o.buf = append(o.buf, '{')
	} else {
		o.buf = append(o.buf, ',')
	}
	quoted, _ := json.Marshal(name) // a string always marshals
	o.buf = append(o.buf, quoted...)
	o.buf = append(append(o.buf, ':'), value...)
}

func (o *object) close() []byte {
	if o.buf == nil {
		return []byte("{}")
	}
	return append(o.buf, '}')
}

// checkUnknown refuses the first member, in sorted order, that the schema
// does not list.
func checkUnknown(members map[string]json.RawMessage, s *jsonschema.Schema, field string) error {
	var unknown []string
	for k := range members {
		if _, ok := s.Properties[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	k := slices.Min(unknown)
	if k == "" {
		k = `""` // the error must name it visibly
	}
	known := "there are none"
	if len(s.PropertyOrder) > 0 {
		known = "the fields are " + strings.Join(s.PropertyOrder, ", ")
	}
	return &Error{Field: join(field, k), Reason: "is not a known field; " + known}
}

func checkArray(raw []byte, s *jsonschema.Schema, field string) ([]byte, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &Error{Field: field, Reason: "must be an array; got " + abbreviate(raw)}
	}
	if reason := itemBounds(len(items), s.MinItems, s.MaxItems); reason != "" {
		return nil, &Error{Field: field, Reason: reason + "; got " + strconv.Itoa(len(items))}
	}
	out := []byte{'['}
	for i, item := range items {
		checked, err := check(item, s.Items, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, checked...)
	}
	return append(out, ']'), nil
}

func checkString(raw []byte, s *jsonschema.Schema, field string) error {
	if s.MinLength == nil && s.MaxLength == nil {
		return nil
	}
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return &Error{Field: field, Reason: "must be a string; got " + abbreviate(raw)}
	}
	if s.Format == pathFormat {
		if s.MaxLength != nil && len(str) > *s.MaxLength {
			return &Error{Field: field, Reason: fmt.Sprintf("must be at most %d bytes; got %d", *s.MaxLength, len(str))}
		}
		return nil
	}
	n := utf8.RuneCountInString(str)
	switch {
	case s.MinLength != nil && *s.MinLength == 1 && n == 0:
		return &Error{Field: field, Reason: "must not be empty"}
	case s.MinLength != nil && n < *s.MinLength:
		return &Error{Field: field, Reason: fmt.Sprintf("must be at least %d characters; got %d", *s.MinLength, n)}
	case s.MaxLength != nil && n > *s.MaxLength:
		return &Error{Field: field, Reason: fmt.Sprintf("must be at most %d characters; got %d", *s.MaxLength, n)}
	}
	return nil
}

func checkNumber(raw []byte, s *jsonschema.Schema, field string) ([]byte, error) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return nil, &Error{Field: field, Reason: "is out of range; got " + abbreviate(raw)}
	}
	if reason := bounds(f, s.Minimum, s.Maximum); reason != "" {
		return nil, &Error{Field: field, Reason: reason + "; got " + abbreviate(raw)}
	}
	if allowsType(s, "number") || !bytes.ContainsAny(raw, ".eE") || math.Abs(f) >= 1<<63 {
		return raw, nil // as written, encoding/json reads it (or goTypeError says why not)
	}
	// An integer written as 1.0 or 1e2 is one to JSON Schema, but
	// encoding/json would refuse it for an int field.
	return strconv.AppendInt(nil, int64(f), 10), nil
}

// bounds says how f breaks the inclusive bounds min and max (either may be
// nil, for no bound on that side), or "" when it keeps them. A one-sided
// bound is stated as one side: "at least 0", never "from 0 to NaN".
func bounds(f float64, min, max *float64) string {
	if (min == nil || f >= *min) && (max == nil || f <= *max) {
		return ""
	}
	switch {
	case min != nil && max != nil:
		return "must be from " + num(*min) + " to " + num(*max)
	case min != nil:
		return "must be at least " + num(*min)
	default:
		return "must be at most " + num(*max)
	}
}

// itemBounds is bounds for the length of an array.
func itemBounds(n int, min, max *int) string {
	switch {
	case (min == nil || n >= *min) && (max == nil || n <= *max):
		return ""
	case min != nil && max != nil && *min == *max:
		return fmt.Sprintf("must have exactly %d items", *min)
	case min != nil && max != nil:
		return fmt.Sprintf("must have from %d to %d items", *min, *max)
	case min != nil:
		return fmt.Sprintf("must have at least %d items", *min)
	default:
		return fmt.Sprintf("must have at most %d items", *max)
	}
}

func checkEnum(raw []byte, s *jsonschema.Schema, field string) error {
	if s.Enum == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return &Error{Field: field, Reason: "must be a valid JSON value"}
	}
	for _, e := range s.Enum {
		if jsonschema.Equal(v, e) {
			return nil
		}
	}
	names := make([]string, len(s.Enum))
	for i, e := range s.Enum {
		names[i] = fmt.Sprint(e)
	}
	return &Error{Field: field, Reason: "must be one of " + strings.Join(names, ", ") + "; got " + abbreviate(raw)}
}
