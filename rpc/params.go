package rpc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// decodeParams decodes params strictly into dst, a pointer to a struct: a
// missing required member, a member of the wrong type and an unknown member
// are each a paramError naming the member. A member is required unless its
// field is a pointer or tagged omitempty. Absent or null params read as {}.
func decodeParams(raw *json.RawMessage, dst any) error {
	data := []byte("{}")
	if raw != nil && !bytes.Equal(bytes.TrimSpace(*raw), []byte("null")) {
		data = *raw
	}
	return decodeObject(data, reflect.ValueOf(dst).Elem(), "")
}

func decodeObject(data []byte, v reflect.Value, prefix string) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil || members == nil {
		name := strings.TrimSuffix(prefix, ".")
		if name == "" {
			name = "params"
		}
		return &paramError{field: name, reason: "must be an object"}
	}
	fields := structFields(v.Type())
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := fields[k]; !ok {
			if k == "" {
				k = `""` // data.field must name it visibly
			}
			return &paramError{field: prefix + k, reason: "unknown field"}
		}
	}
	for _, name := range sortedKeys(fields) {
		f := fields[name]
		raw, present := members[name]
		isNull := present && bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
		switch {
		case (!present || isNull) && f.required:
			return &paramError{field: prefix + name, reason: "is required"}
		case !present || isNull:
			continue
		}
		if err := decodeValue(raw, v.Field(f.index), prefix+name); err != nil {
			return err
		}
	}
	return nil
}

func decodeValue(raw json.RawMessage, fv reflect.Value, name string) error {
	target := fv
	if fv.Kind() == reflect.Pointer {
		target = reflect.New(fv.Type().Elem()).Elem()
	}
	if target.Kind() == reflect.Struct && target.Type() != reflect.TypeFor[json.RawMessage]() {
		if err := decodeObject(raw, target, name+"."); err != nil {
			return err
		}
	} else if err := json.Unmarshal(raw, target.Addr().Interface()); err != nil {
		return &paramError{field: name, reason: "must be " + describe(target.Type())}
	}
	if fv.Kind() == reflect.Pointer {
		fv.Set(target.Addr())
	}
	return nil
}

type fieldInfo struct {
	index    int
	required bool
}

func structFields(t reflect.Type) map[string]fieldInfo {
	out := map[string]fieldInfo{}
	for _, f := range jsonFields(t) {
		out[f.name] = fieldInfo{index: f.index, required: f.required}
	}
	return out
}

func sortedKeys(m map[string]fieldInfo) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// describe names a Go type the way a JSON client thinks of it.
func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a valid value"
}
