package rpc

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/args"
)

// method is one entry of the method table.
type method struct {
	name   string
	doc    string
	params *jsonschema.Schema
	result reflect.Type // nil for notifications
	errors []int64      // the protocol errors it may answer besides invalid_params and internal
	inline bool         // takes effect in the read loop (see handler)
	// decode checks raw params against params and returns them typed.
	decode func(raw []byte) (any, error)
	run    func(ctx context.Context, sess *session, params any) (any, error)
}

// typed makes a method from a handler on typed params, whose schema and
// strict decoding come from their struct (package args), once for every
// method.
func typed[P, R any](name, doc string, f func(ctx context.Context, sess *session, p P) (R, error)) method {
	spec := args.For[P]()
	return method{
		name:   name,
		doc:    doc,
		params: spec.Schema(),
		result: reflect.TypeFor[R](),
		decode: func(raw []byte) (any, error) { return spec.Decode(raw) },
		run: func(ctx context.Context, sess *session, p any) (any, error) {
			return f(ctx, sess, p.(P))
		},
	}
}

// rawParams is what a method gets before decoding.
type rawParams = *json.RawMessage

// call decodes a request's params and runs the method on them.
func (m method) call(ctx context.Context, sess *session, raw rawParams) (any, error) {
	var data []byte
	if raw != nil {
		data = *raw
	}
	p, err := m.decode(data)
	if err != nil {
		return nil, err
	}
	return m.run(ctx, sess, p)
}

// inline marks a method that changes the session: it runs in the read
// loop, so it takes effect in the order the client sent it.
func inline(m method) method {
	m.inline = true
	return m
}

// notification marks a method a client sends as a notification: it has no
// result (a request to it gets null).
func notification(m method) method {
	m.result = nil
	return m
}

// mayFail lists the protocol errors a method answers besides
// invalid_params and internal (for rpc.discover).
func mayFail(m method, codes ...int64) method {
	m.errors = codes
	return m
}

// Params and results shared by the groups (docs/protocol.md, Methods); each
// group's own are in its file. A params struct's tags give its schema
// (package args): json the names, and whether a member may be left out
// (omitempty, omitzero); jsonschema the description. Paths are args.Path,
// bounded in bytes.
type (
	noParams struct{}
	// projectParams name the project a method acts on; the params of the
	// other methods that take a project embed them.
	projectParams struct {
		ProjectPath args.Path `json:"projectPath" jsonschema:"The project's directory: an absolute path to an existing directory."`
	}
	removeResult struct {
		Removed bool `json:"removed"`
	}
)

// methodTable is every method, in the order rpc.discover lists them.
func (s *Server) methodTable() []method {
	docker := []int64{codeDockerUnavailable, codeTimeout}
	needsRunning := append([]int64{codeNotRunning}, docker...)
	return slices.Concat([]method{
		typed("initialize", "Opens the session: names the server and says whether Docker answers, and if not, what to do.", s.initialize),
		inline(typed("shutdown", "Ends the session: afterwards every request but exit is refused. Sandboxes keep running.", s.shutdown)),
		notification(inline(typed("exit", "Notification: the server exits (0 after shutdown, 1 otherwise).", s.exit))),
		typed("docker/status", "Whether a Docker engine answers, where, and which version; if not, what to do.", s.dockerStatus),
		s.afterReconcile(mayFail(s.recorded(activity.KindLifecycle, typed("sandbox/start", "Starts (or creates) the project's sandbox and returns once its desktop answers. Reports sandbox/progress while it runs.", s.start)),
			append([]int64{codeImageBuildFailed, codeStartFailed, codeProjectFile, codeTooManySandboxes, codeNeedsApproval}, docker...)...)),
		mayFail(typed("sandbox/approve", "Records the user's approval of what the project's repository content asks (a Dockerfile to build, limits above the caps), named by the digest a needs_approval error gave; kept in the user's own state, never in the project. A digest the project does not ask now is invalid_params (field digest), and nothing is recorded.", s.approve), codeProjectFile, codeStartFailed),
		s.afterReconcile(mayFail(s.recorded(activity.KindLifecycle, typed("sandbox/pause", "Freezes the project's running sandbox (docker pause): every process stops where it is, its windows and memory kept; sandbox/start resumes it. Pausing a paused sandbox returns its state.", s.pause)), needsRunning...)),
		s.afterReconcile(mayFail(s.recorded(activity.KindLifecycle, typed("sandbox/stop", "Stops the project's sandbox, keeping its container and files.", s.stop)), needsRunning...)),
		s.afterReconcile(mayFail(typed("sandbox/remove", "Deletes a sandbox's container and its project's .pilot/sandbox.json: by projectPath (whose directory may be gone), or by containerId.", s.remove), docker...)),
		s.afterReconcile(mayFail(typed("sandbox/status", "The project's sandbox, or null when it has none.", s.status), docker...)),
		s.afterReconcile(mayFail(typed("sandbox/list", "Every sandbox on the engine.", s.list), docker...)),
		perSandbox(s.afterReconcile(mayFail(s.recorded(activity.KindExec, typed("sandbox/exec", "Runs a shell command under bash -lc in the running sandbox as its user, with DISPLAY set, and answers when it ends (a background child it leaves does not hold the answer). A non-zero exit is a result. With outputToken, the output also comes as sandbox/output notifications before the answer; with background, the command runs on and the answer is its pid and log file.", s.exec)), needsRunning...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/processes", "The background processes started through sandbox/exec that still run.", s.processes), needsRunning...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/kill", "Ends a background process started through sandbox/exec, with every process it started: SIGTERM, then SIGKILL after 2 s.", s.kill), needsRunning...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/ports/expose", "Makes a port of the running sandbox (even one its program binds to 127.0.0.1 inside) answer on a free port of the host's 127.0.0.1, while the sandbox runs and this sidecar serves. Exposing a port again returns the same host port.", s.exposePort), needsRunning...))),
		s.afterReconcile(mayFail(typed("sandbox/ports/forward", "Makes localhost:port in the sandbox reach the host's 127.0.0.1:hostPort (the same number when left out), now if the sandbox runs and at every start: the list is kept in the user's own state, never in the project. A user's decision: no agent tool can add one. Forwarding a port again with another hostPort changes it.", s.forwardPort), docker...)),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/ports/list", "The forwarded and exposed ports, and what listens on TCP in the running sandbox now (on a stopped one, the forwards kept for its next start).", s.listPorts), docker...))),
		typed("sandbox/ports/close", "Ends a forwarded or an exposed port and its connections: closed is false when it was not there.", s.closePort),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/browser", "The ws:// address of the sandbox's Chromium DevTools Protocol, on a 127.0.0.1 port of the host with a secret that changes at every start, for Playwright's connectOverCDP or Puppeteer's connect; Chromium starts if it is not running.", s.browser),
			append([]int64{codeNoBrowser}, needsRunning...)...))),
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/screenshot", "An image of the sandbox's whole display, at its full size: PNG, or JPEG if asked.", s.screenshot), needsRunning...))),
	}, s.fileMethods(docker), s.networkMethods(), s.taskMethods(needsRunning), s.recordingMethods(needsRunning), []method{
		mayFail(typed("sandbox/setToolsEnabled", "Switches the project's agent tools on or off (dockerToolsEnabled in .pilot/settings.json).", s.setToolsEnabled), codeProjectFile),
		typed("sandbox/getToolsEnabled", "Whether the project's agent tools are on (default false).", s.getToolsEnabled),
		s.afterReconcile(mayFail(typed("project/close", "The app closed the project: its sandbox is stopped and kept.", s.closeProject), docker...)),
		s.afterReconcile(mayFail(typed("sandbox/close", "The app closed the project: its running sandbox is paused, or stopped when config.json's closeAction is \"stop\"; null when it has none.", s.closeSandbox), docker...)),
		typed("tools/list", "The agent tools, or none when the project's agent tools are off.", s.listTools),
		perSandbox(s.afterReconcile(mayFail(typed("tools/call", "Runs an agent tool for the project. Failures the model can correct are results with isError.", s.callTool), codeToolsDisabled))),
		typed("sandbox/activity/export", "Writes the project's session into a new folder a person can keep or send (docs/activity.md, Export): actions.jsonl (the timeline of the window, oldest first, thumbnails as files), screens/ (the thumbnails, JPEG) and recordings/ (the ended recordings of that time, copied). Never into a folder that exists.", s.exportActivity),
		typed("sandbox/activity", "The project's timeline (docs/activity.md): what the app, MCP clients, tasks and the user did in its sandbox, oldest first; with since, the entries after it, else the newest. Each new entry also comes as the notification sandbox/activity.", s.readActivity),
		typed("sandbox/control/get", "Who holds the project's desktop now (agent or user), and the reason of an agent's handOver request waiting for the user: what a panel opened after the request shows.", s.getControl),
		typed("sandbox/control/take", "The user takes the project's desktop: the agent's clicks, typing and keys answer that the user has control (a tool result with isError) until sandbox/control/release, or until this connection closes (or its sidecar dies: then within 30 s). Every connection of every sidecar hears sandbox/control.", s.takeControl),
		typed("sandbox/control/release", "The user gives the project's desktop back to the agent, and ends an agent's handOver request.", s.releaseControl),
		typed("rpc.discover", "This document: every method, notification and error of the protocol, as OpenRPC.", s.discover),
		notification(inline(typed("$/cancelRequest", "Notification: cancels the request with this id, which then answers request_cancelled.", s.cancelRequest))),
	})
}
