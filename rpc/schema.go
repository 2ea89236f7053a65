package rpc

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// schema is a JSON Schema object. Maps marshal with sorted keys, so a
// document built from them is the same bytes every time.
type schema = map[string]any

// schemaNames gives the protocol's shared result types the names
// PROTOCOL.md uses; they go into components.schemas and are referenced.
var schemaNames = map[reflect.Type]string{
	reflect.TypeFor[service.State]():        "SandboxState",
	reflect.TypeFor[service.DockerStatus](): "DockerStatus",
	reflect.TypeFor[desktop.Display]():      "Display",
	reflect.TypeFor[service.Progress]():     "SandboxProgress",
	reflect.TypeFor[service.ExecOutput]():   "ExecResult",
	reflect.TypeFor[tools.Tool]():           "Tool",
	reflect.TypeFor[tools.Content]():        "Content",
	reflect.TypeFor[tools.Result]():         "ToolResult",
	reflect.TypeFor[Info]():                 "Info",
}

// schemaOverrides are types whose JSON form reflection cannot see: enums
// declared as constants, raw JSON, and ids.
var schemaOverrides = map[reflect.Type]schema{
	reflect.TypeFor[service.Status](): {"type": "string", "enum": []string{
		string(service.StatusStarting), string(service.StatusRunning), string(service.StatusStopping),
		string(service.StatusStopped), string(service.StatusError),
	}},
	reflect.TypeFor[json.RawMessage](): {},
	reflect.TypeFor[requestID]():       {"type": []string{"string", "integer"}, "minimum": 0},
}

// schemaGen reflects JSON Schemas from the Go types of params and results,
// by the rules decodeParams and encoding/json apply: a member is required
// unless its field is a pointer or omitempty; a top-level pointer result
// may be null.
type schemaGen struct {
	defs map[string]schema // components.schemas, by name
}

func newSchemaGen() *schemaGen { return &schemaGen{defs: map[string]schema{}} }

// params is the schema of a params type: every object is closed, since
// decodeParams refuses unknown members, and nothing is shared by reference.
func (g *schemaGen) params(t reflect.Type) schema { return g.of(t, true) }

// result is the schema of a result type. A pointer result may be null.
func (g *schemaGen) result(t reflect.Type) schema {
	if t.Kind() == reflect.Pointer {
		if t.Elem() == reflect.TypeFor[struct{}]() {
			return schema{"type": "null"}
		}
		return schema{"oneOf": []schema{g.of(t.Elem(), false), {"type": "null"}}}
	}
	return g.of(t, false)
}

func (g *schemaGen) of(t reflect.Type, strict bool) schema {
	if s, ok := schemaOverrides[t]; ok {
		return s
	}
	if name, ok := schemaNames[t]; ok && !strict {
		if _, done := g.defs[name]; !done {
			g.defs[name] = schema{} // a placeholder stops recursion
			g.defs[name] = g.object(t, false)
		}
		return schema{"$ref": "#/components/schemas/" + name}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem(), strict)
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return schema{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return schema{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number"}
	case reflect.Slice, reflect.Array:
		return schema{"type": "array", "items": g.of(t.Elem(), strict)}
	case reflect.Map:
		return schema{"type": "object", "additionalProperties": g.of(t.Elem(), strict)}
	case reflect.Struct:
		return g.object(t, strict)
	}
	return schema{}
}

func (g *schemaGen) object(t reflect.Type, strict bool) schema {
	props := schema{}
	required := []string{}
	for _, f := range jsonFields(t) {
		props[f.name] = g.of(f.typ, strict)
		if f.required {
			required = append(required, f.name)
		}
	}
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	if strict {
		s["additionalProperties"] = false
	}
	return s
}

// jsonField is a struct field as JSON sees it.
type jsonField struct {
	name     string
	typ      reflect.Type
	index    int
	required bool
}

// jsonFields lists a struct's members in declaration order, named by their
// json tags. A member is required unless its field is a pointer or
// omitempty: the rule decodeParams applies to params.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		optional := f.Type.Kind() == reflect.Pointer || strings.Contains(opts, "omitempty")
		out = append(out, jsonField{name: name, typ: f.Type, index: i, required: !optional})
	}
	return out
}
