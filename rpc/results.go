package rpc

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// schema is a JSON Schema object in the OpenRPC document. Maps marshal
// with sorted keys, so a document built from them is the same bytes every
// time.
type schema = map[string]any

// asMap is a params schema (package args) as a part of the document.
func asMap(s *jsonschema.Schema) schema {
	data, err := json.Marshal(s)
	var m schema
	if err != nil || json.Unmarshal(data, &m) != nil {
		return schema{} // jsonschema-go writes the empty schema as true
	}
	return m
}

// schemaNames gives the protocol's shared result types the names
// docs/protocol.md uses; they go into components.schemas and are referenced.
var schemaNames = map[reflect.Type]string{
	reflect.TypeFor[service.State]():             "SandboxState",
	reflect.TypeFor[service.DockerStatus]():      "DockerStatus",
	reflect.TypeFor[desktop.Display]():           "Display",
	reflect.TypeFor[service.Progress]():          "SandboxProgress",
	reflect.TypeFor[service.ExecOutput]():        "ExecResult",
	reflect.TypeFor[service.BackgroundProcess](): "BackgroundProcess",
	reflect.TypeFor[service.Process]():           "Process",
	reflect.TypeFor[ports.Exposed]():             "ExposedPort",
	reflect.TypeFor[ports.Forwarded]():           "ForwardedPort",
	reflect.TypeFor[tools.Tool]():                "Tool",
	reflect.TypeFor[tools.Content]():             "Content",
	reflect.TypeFor[tools.Result]():              "ToolResult",
	reflect.TypeFor[Info]():                      "Info",
	reflect.TypeFor[sandboxfs.Entry]():           "FileEntry",
	reflect.TypeFor[permission.Question]():       "PermissionRequest",
	reflect.TypeFor[permission.Rule]():           "KeptDecision",
	reflect.TypeFor[netpolicy.View]():            "NetworkPolicy",
	reflect.TypeFor[projectfs.NetLogEntry]():     "NetworkLogEntry",
	reflect.TypeFor[tasks.Record]():              "Task",
	reflect.TypeFor[tasks.Event]():               "TaskEvent",
	reflect.TypeFor[tasks.Finished]():            "TaskFinished",
	reflect.TypeFor[workspace.Synced]():          "WorkspaceSync",
	reflect.TypeFor[workspace.Diff]():            "TaskDiff",
}

// schemaAlternatives are results that are one of several types.
var schemaAlternatives = map[reflect.Type][]reflect.Type{
	reflect.TypeFor[execAnswer](): {reflect.TypeFor[service.ExecOutput](), reflect.TypeFor[service.BackgroundProcess]()},
}

// schemaOverrides are types whose JSON form reflection cannot see: enums
// declared as constants, and a tool's input schema, itself a schema.
var schemaOverrides = map[reflect.Type]schema{
	reflect.TypeFor[service.Status](): {"type": "string", "enum": []string{
		string(service.StatusStarting), string(service.StatusRunning), string(service.StatusStopping),
		string(service.StatusStopped), string(service.StatusError), string(service.StatusPaused),
	}},
	reflect.TypeFor[jsonschema.Schema](): {},
	// encoding/json writes bytes as a base64 string (an image's data).
	reflect.TypeFor[[]byte](): {"type": "string"},
	// JSON as it is: a log entry's cause and process.
	reflect.TypeFor[json.RawMessage](): {},
	// One object: type and timeMs, and the fields of the type's body
	// (tasks.Event.MarshalJSON; docs/protocol.md, Tasks).
	reflect.TypeFor[tasks.Event](): taskEventSchema,
	// An address range is written as text: "10.0.0.0/8".
	reflect.TypeFor[netip.Prefix](): {"type": "string"},
}

// resultSchemas reflects the JSON Schemas of results and of the server's
// notifications from their Go types, by the rules encoding/json writes
// them with: a member is required unless omitempty, and a top-level
// pointer result may be null. (Params are the args package's.)
type resultSchemas struct {
	defs map[string]schema // components.schemas, by name
}

func newResultSchemas() *resultSchemas { return &resultSchemas{defs: map[string]schema{}} }

// result is the schema of a result type. A pointer result may be null.
func (g *resultSchemas) result(t reflect.Type) schema {
	if t.Kind() == reflect.Pointer {
		if t.Elem() == reflect.TypeFor[struct{}]() {
			return schema{"type": "null"}
		}
		return schema{"oneOf": []schema{g.of(t.Elem()), {"type": "null"}}}
	}
	return g.of(t)
}

func (g *resultSchemas) of(t reflect.Type) schema {
	if s, ok := schemaOverrides[t]; ok {
		return s
	}
	if alts, ok := schemaAlternatives[t]; ok {
		var oneOf []schema
		for _, a := range alts {
			oneOf = append(oneOf, g.of(a))
		}
		return schema{"oneOf": oneOf}
	}
	if name, ok := schemaNames[t]; ok {
		if _, done := g.defs[name]; !done {
			g.defs[name] = schema{} // a placeholder stops recursion
			g.defs[name] = g.object(t)
		}
		return schema{"$ref": "#/components/schemas/" + name}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
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
		return schema{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return schema{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		return g.object(t)
	}
	return schema{}
}

func (g *resultSchemas) object(t reflect.Type) schema {
	props := schema{}
	required := []string{}
	for _, f := range jsonFields(t) {
		props[f.name] = g.of(f.typ)
		if f.required {
			required = append(required, f.name)
		}
	}
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// jsonField is a struct field as encoding/json writes it.
type jsonField struct {
	name     string
	typ      reflect.Type
	required bool // always written: not omitempty or omitzero
}

// jsonFields lists a struct's members in declaration order, named by their
// json tags.
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
		optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		out = append(out, jsonField{name: name, typ: f.Type, required: !optional})
	}
	return out
}

// taskEventSchema is a task event's JSON: its type, when, and the fields
// each type carries.
var taskEventSchema = schema{
	"type":     "object",
	"required": []string{"type", "timeMs"},
	"properties": map[string]schema{
		"type":              {"type": "string", "enum": []string{tasks.TypeStarted, tasks.TypeText, tasks.TypeTool, tasks.TypeToolResult, tasks.TypeLine, tasks.TypeUsage, tasks.TypeFinished}},
		"timeMs":            {"type": "integer", "description": "milliseconds since the task started"},
		"agent":             {"type": "string", "description": "started"},
		"argv":              {"type": "array", "items": schema{"type": "string"}, "description": "started"},
		"base":              {"type": "string", "description": "started: the commit the task starts from"},
		"text":              {"type": "string", "description": "text: the agent's words; line: the line"},
		"reasoning":         {"type": "boolean", "description": "text: the agent's thinking"},
		"cut":               {"description": "text, toolResult: true when cut; line: the line's whole length in bytes"},
		"name":              {"type": "string", "description": "tool, toolResult: the tool"},
		"input":             {"description": "tool: its input, JSON (a string preview when over 32 KiB)"},
		"callId":            {"type": "string", "description": "tool, toolResult: pairs a result with its use"},
		"output":            {"type": "string", "description": "toolResult"},
		"isError":           {"type": "boolean", "description": "toolResult"},
		"stream":            {"type": "string", "enum": []string{"stdout", "stderr"}, "description": "line"},
		"inputTokens":       {"type": "integer", "description": "usage"},
		"outputTokens":      {"type": "integer", "description": "usage"},
		"cachedInputTokens": {"type": "integer", "description": "usage"},
		"costUsd":           {"type": "number", "description": "usage, finished: as the agent reports it"},
		"status":            {"type": "string", "enum": []string{tasks.StatusSucceeded, tasks.StatusFailed, tasks.StatusCancelled, tasks.StatusTimedOut, tasks.StatusLost}, "description": "finished"},
		"exitCode":          {"type": "integer", "description": "finished"},
		"durationMs":        {"type": "integer", "description": "finished"},
		"turns":             {"type": "integer", "description": "finished"},
		"error":             {"type": "string", "description": "finished: why, when the agent or the task said"},
		"droppedLines":      {"type": "integer", "description": "finished: output lines past the flood bound, in the sandbox's output file only"},
		"commit":            {"type": "string", "description": "finished: the task's change, saved"},
	},
}
