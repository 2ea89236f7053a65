package rpc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// Error codes (docs/protocol.md, Errors). The two that a bad frame gets are
// answered by the stream itself, and decided there (package wire).
const (
	codeParseError              = wire.CodeParseError
	codeInvalidRequest          = wire.CodeInvalidRequest
	codeMethodNotFound    int64 = -32601
	codeInvalidParams     int64 = -32602
	codeInternal          int64 = -32603
	codeDockerUnavailable int64 = -32001
	codeNotRunning        int64 = -32002
	codeImageBuildFailed  int64 = -32003
	codeStartFailed       int64 = -32004
	codeToolsDisabled     int64 = -32005
	codeTimeout           int64 = -32006
	// codeProjectFile: a file of the project's .pilot directory could not
	// be read or written (an addition: docs/protocol.md, Errors).
	codeProjectFile int64 = -32007
	// codeTooManySandboxes: a start past the user's maxRunning.
	codeTooManySandboxes int64 = -32008
	// codeNoBrowser: sandbox/browser on a sandbox without a browser.
	codeNoBrowser int64 = -32009
	// codeNotFound: no such file or directory in the sandbox.
	codeNotFound int64 = -32010
	// codeNeedsApproval: repository content asks for what the user has
	// not approved.
	codeNeedsApproval int64 = -32011
	// codeConflict: sandbox/tasks/apply found the host's files changed
	// since the task's base; nothing written.
	codeConflict int64 = -32012
	// codeTaskNotFound: no such task.
	codeTaskNotFound int64 = -32013
	// codeBusy: a task runs where the method would change its files, or
	// the sandbox runs as many as it may, or the task has not ended; or
	// the client already runs MaxSandboxCalls calls on the sandbox (an
	// addition: docs/protocol.md, Errors).
	codeBusy int64 = -32015
	// codeUnsafeChange: apply refused a change that reaches outside the
	// project (an addition: docs/protocol.md, Errors).
	codeUnsafeChange int64 = -32016
	// codeRequestCancelled is LSP's answer to a request the client
	// cancelled with $/cancelRequest (an addition: docs/protocol.md, Errors).
	codeRequestCancelled int64 = -32800
)

// errorInfo is what a code means: the stable kind clients switch on,
// and for rpc.discover, what it says.
type errorInfo struct {
	kind    string
	meaning string
}

// errorTable is every error of the protocol, by code: one table, so a
// code cannot have a kind without a meaning.
var errorTable = map[int64]errorInfo{
	codeParseError:        {wire.KindParseError, "The frame is not JSON; the connection stays open."},
	codeInvalidRequest:    {wire.KindInvalidRequest, "Not a JSON-RPC 2.0 request (or a request after shutdown)."},
	codeMethodNotFound:    {"method_not_found", "Unknown method."},
	codeInvalidParams:     {"invalid_params", "Bad params; data.field names the field."},
	codeInternal:          {"internal", "A bug; the log has the detail."},
	codeDockerUnavailable: {"docker_unavailable", "No Docker engine answers; message says what to do."},
	codeNotRunning:        {"not_running", "The method needs a running sandbox."},
	codeImageBuildFailed:  {"image_build_failed", "The sandbox image did not build; data.log holds the last lines of the build."},
	codeStartFailed:       {"start_failed", "The container did not become ready; data.log holds its last output."},
	codeToolsDisabled:     {"tools_disabled", "tools/call on a project whose agent tools are off."},
	codeTimeout:           {"timeout", "A Docker operation did not finish in time."},
	codeProjectFile:       {"file_error", "A file of the project's .pilot directory cannot be read or written (corrupt, refused because it is a link, a device or over 1 MiB, read-only, disk full); data.file names it, message says what to do. Nothing was changed."},
	codeTooManySandboxes:  {"too_many_sandboxes", "As many sandboxes run as maxRunning in the user's config.json allows; data.running lists them ({projectPath, containerId, containerName}), so that one can be stopped."},
	codeNoBrowser:         {"no_browser", "sandbox/browser on a sandbox whose image has no browser (sandbox.image \"desktop\")."},
	codeNotFound:          {"not_found", "No such file or directory in the sandbox (sandbox/files/*); message names the path."},
	codeNeedsApproval:     {"needs_approval", "The project's repository content (.pilot/settings.json, its Dockerfile) asks for what the user has not approved: a Dockerfile to build, limits above the caps in config.json, a wider network policy, or agent CLIs to install (sandbox.agents). data.approval is {kind: \"dockerfile\" | \"limits\" | \"network\" | \"agents\", summary, digest, content, files?, diff?, warnings?}: the text asked, a Dockerfile's files, the change since the last approval of the kind, what reaches beyond the project; sandbox/approve with the digest records the approval."},
	codeConflict:          {"conflict", "sandbox/tasks/apply: the host's files changed since the task's base; data.paths names every one; nothing was written."},
	codeTaskNotFound:      {"task_not_found", "No such task."},
	codeBusy:              {"busy", "A task runs: the sandbox runs as many as config.json maxTasks allows, or a sync or a discard would change the files under it, or the task asked about has not ended; or the client already has as many calls running on this sandbox as it may (data.limit), and this one was not run: send it again when one has ended."},
	codeUnsafeChange:      {"unsafe_change", "sandbox/tasks/apply refused a change that reaches outside the project (a path out of it or into .git or .pilot, a link that leads out, a link of the host's on the way); data.paths names it; nothing was written."},
	codeRequestCancelled:  {"request_cancelled", "The client cancelled the request with $/cancelRequest."},
}

// errToolsDisabled: tools/call on a project whose agent tools are off.
var errToolsDisabled = errors.New("agent tools are disabled for this project: enable them with sandbox/setToolsEnabled")

// errorData is the data member of every error the server sends.
type errorData struct {
	Kind  string   `json:"kind"`
	Field string   `json:"field,omitempty"`
	Log   []string `json:"log,omitempty"`
	// File is the project file at fault (file_error, and start_failed
	// for a wrong setting).
	File string `json:"file,omitempty"`
	// Running are the sandboxes that count against maxRunning
	// (too_many_sandboxes).
	Running []service.RunningSandbox `json:"running,omitempty"`
	// Approval is what the user is asked to approve (needs_approval).
	Approval *service.Approval `json:"approval,omitempty"`
	// Limit is the calls a client may run on one sandbox at once (busy).
	Limit int `json:"limit,omitempty"`
	// Paths are the files at fault (conflict, unsafe_change).
	Paths []string `json:"paths,omitempty"`
}

func newError(code int64, message string, data *errorData) *jsonrpc2.Error {
	if data == nil {
		data = &errorData{}
	}
	data.Kind = errorTable[code].kind
	raw, _ := json.Marshal(data)
	msg := json.RawMessage(raw)
	return &jsonrpc2.Error{Code: code, Message: message, Data: &msg}
}

// toWire decides, in this one place, what every error means to a client.
func toWire(err error) *jsonrpc2.Error {
	var (
		wire    *jsonrpc2.Error
		logged  *service.LogError
		tooMany *service.TooManyError
	)
	switch {
	case errors.As(err, &wire):
		return wire
	case paramsWire(err) != nil:
		return paramsWire(err)
	case errors.Is(err, service.ErrNotFound):
		return newError(codeNotFound, err.Error(), nil)
	case errors.Is(err, service.ErrDockerUnavailable):
		return newError(codeDockerUnavailable, err.Error(), nil)
	case errors.Is(err, service.ErrNotRunning):
		return newError(codeNotRunning, err.Error(), nil)
	case errors.As(err, &logged) && errors.Is(err, service.ErrImageBuild):
		return newError(codeImageBuildFailed, err.Error(), &errorData{Log: logged.Log})
	case errors.As(err, &logged):
		return newError(codeStartFailed, err.Error(), &errorData{Log: logged.Log})
	case projectWire(err) != nil:
		return projectWire(err)
	case taskWire(err) != nil:
		return taskWire(err)
	case errors.As(err, &tooMany):
		return newError(codeTooManySandboxes, err.Error(), &errorData{Running: tooMany.Running})
	case errors.Is(err, service.ErrNoBrowser):
		return newError(codeNoBrowser, err.Error(), nil)
	case errors.Is(err, service.ErrNameConflict):
		return newError(codeStartFailed, err.Error(), nil)
	case errors.Is(err, tools.ErrUnknownTool):
		return newError(codeInvalidParams, "invalid params: name: "+err.Error(), &errorData{Field: "name"})
	case errors.Is(err, errToolsDisabled):
		return newError(codeToolsDisabled, err.Error(), nil)
	case errors.Is(err, service.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return newError(codeTimeout, err.Error(), nil)
	case errors.Is(err, context.Canceled):
		// Only a cancelled request's context is cancelled while its
		// connection can still carry the answer.
		return newError(codeRequestCancelled, "request cancelled", nil)
	default:
		return newError(codeInternal, "internal error: "+err.Error(), nil)
	}
}

// paramsWire is what an error about a request's params means to a client
// (invalid_params naming the field at fault), or nil.
func paramsWire(err error) *jsonrpc2.Error {
	var (
		param    *args.Error
		project  *projectfs.PathError
		argument *service.ArgumentError
		refused  *sandboxfs.FieldError
		answer   *permission.FieldError
		export   *activity.ExportError
	)
	invalid := func(msg, field string) *jsonrpc2.Error {
		return newError(codeInvalidParams, "invalid params: "+msg, &errorData{Field: field})
	}
	switch {
	case errors.As(err, &param):
		field := cmp.Or(param.Field, "params")
		return invalid(field+": "+param.Reason, field)
	case errors.As(err, &project):
		return invalid(project.Error(), "projectPath")
	case errors.As(err, &argument):
		return invalid(argument.Error(), argument.Name)
	case errors.As(err, &refused):
		return invalid(refused.Error(), refused.Field)
	case errors.As(err, &answer):
		return invalid(answer.Error(), answer.Field)
	case errors.As(err, &export):
		return invalid(export.Error(), "dir")
	}
	return nil
}

// projectWire is what an error about the project's own files means to a
// client (what they ask, what is wrong with them), or nil.
func projectWire(err error) *jsonrpc2.Error {
	var (
		approval *service.ApprovalError
		config   *projectfs.ConfigError
		file     *projectfs.FileError
	)
	switch {
	case errors.As(err, &approval):
		return newError(codeNeedsApproval, err.Error(), &errorData{Approval: &approval.Approval})
	case errors.As(err, &config) && projectfs.NetworkKey(config.Field):
		return newError(codeStartFailed, "the network policy cannot be used, so no sandbox with a network starts: "+config.Error(), &errorData{File: config.File})
	case errors.As(err, &config) && projectfs.ModelsKey(config.Field):
		return newError(codeStartFailed, "config.json's models cannot be used, so no task starts: "+config.Error(), &errorData{File: config.File})
	case errors.As(err, &config):
		return newError(codeStartFailed, "the project's sandbox settings are wrong: "+config.Error(), &errorData{File: config.File})
	case errors.As(err, &file):
		return newError(codeProjectFile, file.Error(), &errorData{File: file.Path})
	}
	return nil
}

// taskWire is what an error of the workspace or the tasks means to a
// client, or nil.
func taskWire(err error) *jsonrpc2.Error {
	var (
		conflict *workspace.ConflictError
		unsafe   *workspace.UnsafeError
		write    *workspace.WriteError
		argument *tasks.ArgumentError
	)
	switch {
	case errors.As(err, &conflict):
		return newError(codeConflict, err.Error(), &errorData{Paths: conflict.Paths})
	case errors.As(err, &unsafe):
		return newError(codeUnsafeChange, err.Error(), &errorData{Paths: []string{unsafe.Path}})
	case errors.As(err, &write):
		return newError(codeProjectFile, err.Error(), &errorData{File: write.Path})
	case errors.As(err, &argument):
		return newError(codeInvalidParams, "invalid params: "+argument.Name+": "+argument.Reason, &errorData{Field: argument.Name})
	case errors.Is(err, workspace.ErrBadPath):
		return newError(codeInvalidParams, "invalid params: paths: "+err.Error(), &errorData{Field: "paths"})
	case errors.Is(err, workspace.ErrNotSynced):
		return newError(codeInvalidParams, "invalid params: sync: "+err.Error(), &errorData{Field: "sync"})
	case errors.Is(err, tasks.ErrProjectGone):
		return newError(codeInvalidParams, "invalid params: taskId: "+err.Error(), &errorData{Field: "taskId"})
	case errors.Is(err, tasks.ErrTaskNotFound):
		return newError(codeTaskNotFound, err.Error(), nil)
	case errors.Is(err, tasks.ErrBusy), errors.Is(err, tasks.ErrNotFinished):
		return newError(codeBusy, err.Error(), nil)
	case errors.Is(err, tasks.ErrSandboxGone):
		return newError(codeNotRunning, err.Error(), nil)
	}
	return nil
}
