package rpc

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Exec is what sandbox/exec, sandbox/processes and sandbox/kill need:
// commands run in the running sandbox; *service.Manager is one.
type Exec interface {
	Exec(ctx context.Context, project string, req service.ExecRequest) (service.ExecOutput, error)
	Background(ctx context.Context, project string, req service.ExecRequest) (service.BackgroundProcess, error)
	Processes(ctx context.Context, project string) ([]service.Process, error)
	Kill(ctx context.Context, project string, pid int) error
}

// Params and results of sandbox/exec, sandbox/processes and sandbox/kill
// (docs/protocol.md, Exec, streamed and in the background).
type (
	execParams struct {
		projectParams
		Command     string            `json:"command" jsonschema:"The shell command, run under bash -lc."`
		TimeoutMs   int64             `json:"timeoutMs,omitzero" jsonschema:"Milliseconds before the command is killed; not for a background command."`
		Workdir     args.Path         `json:"workdir,omitempty" jsonschema:"The directory in the sandbox to run it in; the sandbox user's home when left out."`
		OutputToken json.RawMessage   `json:"outputToken,omitempty" jsonschema:"When given, the output also comes as sandbox/output notifications carrying this token, in order, before the answer."`
		Background  bool              `json:"background,omitempty" jsonschema:"Start the command and answer at once with its pid and log file; it runs until it ends or sandbox/kill ends it."`
		Stdin       *string           `json:"stdin,omitempty" jsonschema:"The command's standard input; empty when left out."`
		Env         map[string]string `json:"env,omitempty" jsonschema:"Environment variables to set for the command, by name."`
	}
	killParams struct {
		projectParams
		PID int `json:"pid" jsonschema:"The background process's pid, as sandbox/exec or sandbox/processes gave it."`
	}
	processesResult struct {
		Processes []service.Process `json:"processes"`
	}
	killResult struct {
		Killed bool `json:"killed"`
	}
	// outputParams are the params of sandbox/output.
	outputParams struct {
		ProjectPath string          `json:"projectPath"`
		Token       json.RawMessage `json:"token"`
		Stream      string          `json:"stream"`
		Data        string          `json:"data"`
	}
)

// execAnswer is sandbox/exec's result: how the command ended, or, for a
// background command, what was started.
type execAnswer struct {
	ended   *service.ExecOutput
	started *service.BackgroundProcess
}

func (a execAnswer) MarshalJSON() ([]byte, error) {
	if a.started != nil {
		return json.Marshal(a.started)
	}
	return json.Marshal(a.ended)
}

// TuneSchema states the service's limits: a command is not empty,
// timeoutMs has the service's default and maximum, a token is a string or
// an integer.
func (execParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["command"].MinLength = jsonschema.Ptr(1)
	t := s.Properties["timeoutMs"]
	t.Minimum = jsonschema.Ptr(1.0)
	t.Maximum = jsonschema.Ptr(float64(service.MaxExecTimeout.Milliseconds()))
	t.Default = json.RawMessage(strconv.FormatInt(service.DefaultExecTimeout.Milliseconds(), 10))
	s.Properties["outputToken"].Types = []string{"string", "integer"}
}

// TuneSchema states that a pid is positive.
func (killParams) TuneSchema(s *jsonschema.Schema) { s.Properties["pid"].Minimum = jsonschema.Ptr(1.0) }

func (s *Server) exec(ctx context.Context, sess *session, p execParams) (execAnswer, error) {
	req := service.ExecRequest{
		Command: p.Command,
		Timeout: time.Duration(p.TimeoutMs) * time.Millisecond,
		WorkDir: string(p.Workdir),
		Stdin:   p.Stdin,
		Env:     p.Env,
		// The cause its connections name in a permission question and the
		// log (docs/protocol.md, Permission requests: {exec}).
		Cause: service.ExecCause{Exec: causeOf(p.Command)},
	}
	if p.Background {
		return s.execBackground(ctx, p, req)
	}
	if p.OutputToken != nil {
		req.Output = sess.outputSender(ctx, string(p.ProjectPath), p.OutputToken)
	}
	out, err := s.svc.Exec.Exec(ctx, string(p.ProjectPath), req)
	return execAnswer{ended: &out}, err
}

// execBackground starts a background command. What only a foreground
// command can have is refused rather than ignored.
func (s *Server) execBackground(ctx context.Context, p execParams, req service.ExecRequest) (execAnswer, error) {
	switch {
	case p.OutputToken != nil:
		return execAnswer{}, &args.Error{Field: "outputToken", Reason: "is for a foreground command: a background command's output goes to its logPath"}
	case p.TimeoutMs != service.DefaultExecTimeout.Milliseconds():
		// The decoder fills in the default; any other value was asked for.
		return execAnswer{}, &args.Error{Field: "timeoutMs", Reason: "is for a foreground command: a background command runs until it ends or sandbox/kill ends it"}
	}
	req.Timeout = 0
	started, err := s.svc.Exec.Background(ctx, string(p.ProjectPath), req)
	return execAnswer{started: &started}, err
}

// outputSender sends a command's output to this client as sandbox/output
// notifications. It is called from the one goroutine reading the
// command's output and sends before it returns, so the notifications go
// out in order and before the reply; a client that does not read holds
// the command's output up (the outbox's bound) rather than the sidecar
// buffering it.
func (sess *session) outputSender(ctx context.Context, project string, token json.RawMessage) func(stream, text string) {
	if canonical, err := projectfs.Canonical(project); err == nil {
		project = canonical
	}
	return func(stream, text string) {
		sess.conn.Notify(ctx, "sandbox/output", outputParams{ProjectPath: project, Token: token, Stream: stream, Data: text})
	}
}

func (s *Server) processes(ctx context.Context, _ *session, p projectParams) (processesResult, error) {
	ps, err := s.svc.Exec.Processes(ctx, string(p.ProjectPath))
	return processesResult{Processes: ps}, err
}

func (s *Server) kill(ctx context.Context, _ *session, p killParams) (killResult, error) {
	err := s.svc.Exec.Kill(ctx, string(p.ProjectPath), p.PID)
	return killResult{Killed: err == nil}, err
}

// maxCause bounds the command a cause carries: the sidecar keeps the
// causes of its last 1024 execs (egress/env.go), and a question shows it.
const maxCause = 512

// causeOf is a command as the cause of its connections: at most maxCause
// bytes, not splitting a character, with "…" where it was cut.
func causeOf(command string) string {
	if len(command) <= maxCause {
		return command
	}
	cut := maxCause
	for cut > 0 && !utf8.RuneStart(command[cut]) {
		cut--
	}
	return command[:cut] + "…"
}
