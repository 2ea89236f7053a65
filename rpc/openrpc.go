package rpc

import (
	"context"
	"reflect"
	"slices"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
)

// OpenRPCVersion is the version of the OpenRPC specification rpc.discover
// follows. 1.3 allows a method without a result: a notification.
const OpenRPCVersion = "1.3.2"

// The OpenRPC document's parts (https://spec.open-rpc.org). Members are
// declared in the order the specification lists them.
type (
	openRPCDoc struct {
		OpenRPC    string            `json:"openrpc"`
		Info       openRPCInfo       `json:"info"`
		Methods    []openRPCMethod   `json:"methods"`
		Components openRPCComponents `json:"components"`
		// Notifications the server sends: OpenRPC has no place for them,
		// so they are listed, shaped as methods, under an extension.
		Notifications []openRPCMethod `json:"x-notifications"`
	}
	openRPCInfo struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Version     string `json:"version"`
	}
	openRPCMethod struct {
		Name           string              `json:"name"`
		Description    string              `json:"description"`
		ParamStructure string              `json:"paramStructure"`
		Params         []contentDescriptor `json:"params"`
		Result         *contentDescriptor  `json:"result,omitempty"`
		Errors         []schema            `json:"errors,omitempty"`
	}
	contentDescriptor struct {
		Name     string `json:"name"`
		Required bool   `json:"required,omitempty"`
		Schema   schema `json:"schema"`
	}
	openRPCError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    schema `json:"data"`
	}
	openRPCComponents struct {
		Schemas map[string]schema       `json:"schemas"`
		Errors  map[string]openRPCError `json:"errors"`
	}
)

// discover is rpc.discover: the OpenRPC document, generated from the method
// table and the Go types of params and results, so it cannot drift from
// what the server does.
func (s *Server) discover(context.Context, *session, noParams) (*openRPCDoc, error) {
	return s.openRPC(), nil
}

func (s *Server) openRPC() *openRPCDoc {
	gen := newResultSchemas()
	doc := &openRPCDoc{
		OpenRPC: OpenRPCVersion,
		Info: openRPCInfo{
			Title:       "pilot-sandbox",
			Description: "A Docker sandbox with a virtual desktop for each project, driven over JSON-RPC 2.0 (docs/protocol.md). Server " + s.info.Name + " " + s.info.Version + ".",
			Version:     strconv.Itoa(ProtocolVersion),
		},
		Methods: []openRPCMethod{},
	}
	for _, m := range s.table {
		om := openRPCMethod{
			Name:           m.name,
			Description:    m.doc,
			ParamStructure: "by-name",
			Params:         paramDescriptors(m.params),
			Errors:         errorRefs(m),
		}
		if m.result != nil {
			om.Result = &contentDescriptor{Name: "result", Schema: gen.result(m.result)}
		}
		doc.Methods = append(doc.Methods, om)
	}
	doc.Notifications = []openRPCMethod{
		serverNotification(gen, "sandbox/event", "After every status change of any sandbox, including changes found at startup and containers that die, stop or vanish outside the sidecar. state is null when the project has no sandbox any more.", reflect.TypeFor[eventParams]()),
		serverNotification(gen, "sandbox/progress", "While a start or image build runs (stage image, create, start or ready), and while a sync streams the project into the sandbox (stage sync, current and total in bytes, to the connection that asked).", reflect.TypeFor[service.Progress]()),
		serverNotification(gen, "sandbox/output", "The output of a sandbox/exec that gave an outputToken, as text, in order, before its answer. token is the request's outputToken; stream is stdout or stderr.", reflect.TypeFor[outputParams]()),
		serverNotification(gen, "sandbox/permission", "A question only the user may answer (kind network, expose or limits): what waits for it is held until sandbox/permission/answer, or until expiresAt, when it is denied with the reason no answer. Every connection hears every project's questions; the first answer counts.", reflect.TypeFor[permission.Question]()),
		serverNotification(gen, "sandbox/permission/resolved", "A question ended: answered (by this or another client, or a terminal), settled by a change of the policy, expired (by timeout, reason no answer) or its sandbox stopped. A client showing the question takes it away.", reflect.TypeFor[permission.Resolved]()),
		serverNotification(gen, "sandbox/network", "A new entry of a project's connection log, for a connection that asked sandbox/network/log with watch.", reflect.TypeFor[networkParams]()),
		serverNotification(gen, "sandbox/activity", "A new entry of a sandbox's timeline (docs/activity.md), to every connection of every sidecar of the user, in seq order per project: this sidecar's at once, another's within half a second.", reflect.TypeFor[activity.Entry]()),
		serverNotification(gen, "sandbox/control", "Who holds a project's desktop changed (docs/activity.md, Control): holder agent or user, and the reason of an agent's handOver request until the user gives control back; to every connection of every sidecar of the user.", reflect.TypeFor[activity.ControlState]()),
		serverNotification(gen, "sandbox/task", "An event of a task (docs/protocol.md, Tasks), to every connection, in order for each task: seq numbers a task's events from 1; after a sidecar restart the events are read again with the same numbers, so a client keeps the first it saw of each, and one that fell behind (a gap in seq) reads them with sandbox/tasks/get.", reflect.TypeFor[tasks.Notification]()),
		serverNotification(gen, "sandbox/warning", "A file of a project's .pilot directory the sidecar found corrupt or unreadable (and, if it had to write it, kept as keptAs), or could not write while the sandbox runs on. A file that is a symbolic link, a device, a pipe or over 1 MiB is refused: it counts as absent and is never read or written through. problem is corrupt, unreadable, unwritable or refused; message says what happened and what to do. Sent once per problem.", reflect.TypeFor[service.Warning]()),
	}
	doc.Components = openRPCComponents{Schemas: gen.defs, Errors: errorComponents()}
	return doc
}

// paramDescriptors lists a params schema's members, as by-name params.
func paramDescriptors(ps *jsonschema.Schema) []contentDescriptor {
	out := []contentDescriptor{}
	for _, name := range ps.PropertyOrder {
		out = append(out, contentDescriptor{Name: name, Required: slices.Contains(ps.Required, name), Schema: asMap(ps.Properties[name])})
	}
	return out
}

func serverNotification(gen *resultSchemas, name, doc string, params reflect.Type) openRPCMethod {
	var ps []contentDescriptor
	for _, f := range jsonFields(params) {
		ps = append(ps, contentDescriptor{Name: f.name, Required: f.required, Schema: gen.result(f.typ)})
	}
	return openRPCMethod{Name: name, Description: doc, ParamStructure: "by-name", Params: ps}
}

// errorRefs names the errors a method may answer: invalid_params when it
// takes params, then its own.
func errorRefs(m method) []schema {
	codes := slices.Clone(m.errors)
	if len(m.params.Properties) > 0 {
		codes = append([]int64{codeInvalidParams}, codes...)
	}
	var refs []schema
	for _, c := range codes {
		refs = append(refs, schema{"$ref": "#/components/errors/" + errorTable[c].kind})
	}
	return refs
}

// errorComponents is every error of the protocol, by kind.
func errorComponents() map[string]openRPCError {
	out := map[string]openRPCError{}
	for code, e := range errorTable {
		out[e.kind] = openRPCError{Code: code, Message: e.meaning, Data: schema{"kind": e.kind}}
	}
	return out
}
