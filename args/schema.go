package args

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// typeSchemas are the types whose schema is not what their Go shape says.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	// A raw member is any JSON value; whoever reads it checks it.
	reflect.TypeFor[json.RawMessage](): {},
	reflect.TypeFor[Path]():            {Type: "string", MaxLength: jsonschema.Ptr(MaxPathBytes), Format: pathFormat},
}

// schemaFor infers T's schema, tunes it, and checks that the decoder
// enforces all of it.
func schemaFor[T any]() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, errors.New("arguments must be a struct")
	}
	walk(s, normalize)
	if t, ok := any(new(T)).(Tuner); ok {
		t.TuneSchema(s)
	}
	if err := supported(s); err != nil {
		return nil, err
	}
	if _, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return nil, err
	}
	return s, nil
}

// walk calls f on s and every schema under it that the decoder reads.
func walk(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	f(s)
	for _, p := range s.Properties {
		walk(p, f)
	}
	if s.Items != nil {
		walk(s.Items, f)
	}
	if isMap(s) {
		walk(s.AdditionalProperties, f)
	}
}

// isMap is the schema of a Go map: an object whose members, named as the
// client likes, all have one schema.
func isMap(s *jsonschema.Schema) bool {
	return s.AdditionalProperties != nil && !isFalse(s.AdditionalProperties)
}

// normalize states what the decoder does. A member left out and a member
// that is null are one thing to it, so no type admits null (jsonschema-go
// adds null for pointers and slices); and an object lists its properties
// even when it has none, which some hosts of models require.
func normalize(s *jsonschema.Schema) {
	if i := slices.Index(s.Types, "null"); i >= 0 {
		s.Types = slices.Delete(s.Types, i, i+1)
		if len(s.Types) == 1 {
			s.Type, s.Types = s.Types[0], nil
		}
	}
	if s.Type == "object" && s.Properties == nil && !isMap(s) {
		s.Properties = map[string]*jsonschema.Schema{}
	}
}

// checkedKeywords are the fields of a schema the decoder enforces (or that
// only describe). A schema using any other is refused, so that nothing a
// schema promises goes unchecked.
var checkedKeywords = map[string]bool{
	"Type": true, "Types": true, "Description": true, "Default": true, "Enum": true,
	"Minimum": true, "Maximum": true, "MinLength": true, "MaxLength": true, "Format": true,
	"Properties": true, "Required": true, "AdditionalProperties": true, "PropertyOrder": true,
	"Items": true, "MinItems": true, "MaxItems": true,
}

func supported(s *jsonschema.Schema) error {
	var err error
	walk(s, func(s *jsonschema.Schema) {
		v := reflect.ValueOf(s).Elem()
		for i := range v.NumField() {
			if name := v.Type().Field(i).Name; !checkedKeywords[name] && !v.Field(i).IsZero() {
				err = errors.Join(err, fmt.Errorf("the decoder does not check %s", name))
			}
		}
		if s.Format != "" && (s.Format != pathFormat || s.Type != "string") {
			err = errors.Join(err, fmt.Errorf("the decoder does not check format %q", s.Format))
		}
		if s.Type == "object" && !isFalse(s.AdditionalProperties) && (!isMap(s) || len(s.Properties) > 0) {
			err = errors.Join(err, errors.New("an object must be a struct or a map"))
		}
		for name := range s.Properties {
			if !slices.Contains(s.PropertyOrder, name) {
				err = errors.Join(err, fmt.Errorf("property %q is not in propertyOrder", name))
			}
		}
	})
	return err
}

// isFalse is the schema that matches nothing, as jsonschema-go writes it.
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}
