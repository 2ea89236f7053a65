package rpc

import (
	"context"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// Tasks is what the workspace and task methods serve, and the task events
// every connection hears (docs/protocol.md, "Tasks"): the process's task
// manager (cmd/pilot-sandbox's sidecar).
type Tasks interface {
	Sync(ctx context.Context, project string, report func(workspace.Progress)) (workspace.Synced, error)
	Start(ctx context.Context, req tasks.StartRequest, report func(workspace.Progress)) (tasks.Record, error)
	List(project string) ([]tasks.Record, error)
	Get(ctx context.Context, id string) (tasks.Got, error)
	Cancel(ctx context.Context, id string) (tasks.Record, error)
	Diff(ctx context.Context, id string) (workspace.Diff, error)
	Apply(ctx context.Context, id string, paths []string) ([]string, error)
	Discard(ctx context.Context, id string) error
	// Listen hears every task's events until stop.
	Listen(fn func(tasks.Notification)) (stop func())
}

// stageSync is sandbox/progress's stage while a sync streams.
const stageSync = "sync"

// Params and results of sandbox/workspace/sync and sandbox/tasks/*.
type (
	taskStartParams struct {
		projectParams
		Agent   string            `json:"agent" jsonschema:"What runs: claude (Claude Code, -p PROMPT --output-format stream-json --verbose), codex (codex exec --json PROMPT) or command (command as argv, no shell)."`
		Prompt  string            `json:"prompt,omitempty" jsonschema:"The agent's task, for claude and codex."`
		Command []string          `json:"command,omitempty" jsonschema:"For agent command: the program and its arguments, run without a shell."`
		Env     map[string]string `json:"env,omitempty" jsonschema:"Environment variables to add, by name."`
		Timeout string            `json:"timeout,omitempty" jsonschema:"How long the task may run before it is ended, as a duration: 30m (the default), 2h, 90s; at most 24h."`
		Sync    *bool             `json:"sync,omitempty" jsonschema:"Sync the project into /workspace first (the default); false starts on the workspace as it is."`
	}
	taskParams struct {
		TaskID string `json:"taskId" jsonschema:"The task's id, as sandbox/tasks/start gave it."`
	}
	taskApplyParams struct {
		taskParams
		Paths []string `json:"paths,omitempty" jsonschema:"Apply only these paths of the change (as sandbox/tasks/diff names them); all of it when left out."`
	}
	taskStartResult struct {
		TaskID string       `json:"taskId"`
		Task   tasks.Record `json:"task"`
	}
	taskListResult struct {
		Tasks []tasks.Record `json:"tasks"`
	}
	taskResult struct {
		Task tasks.Record `json:"task"`
	}
	taskApplyResult struct {
		Applied []string `json:"applied"`
	}
)

// TuneSchema names the agents, bounds the prompt and the timeout.
func (taskStartParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["agent"].Enum = []any{tasks.AgentClaude, tasks.AgentCodex, tasks.AgentCommand}
	s.Properties["prompt"].MaxLength = jsonschema.Ptr(tasks.MaxPrompt)
	s.Properties["command"].MinItems = jsonschema.Ptr(1)
	s.Properties["timeout"].MaxLength = jsonschema.Ptr(20)
}

// TuneSchema bounds the id.
func (taskParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["taskId"].MinLength, s.Properties["taskId"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(64)
}

// taskMethods are the rows of the workspace and task methods.
func (s *Server) taskMethods(needsRunning []int64) []method {
	busy := append([]int64{codeBusy}, needsRunning...)
	found := append([]int64{codeTaskNotFound}, needsRunning...)
	return []method{
		s.afterReconcile(mayFail(typed("sandbox/workspace/sync", "Makes the sandbox's /workspace hold the project's files as they are now (what git would list; every file outside a repository; never .git or .pilot), sending only what changed, with sandbox/progress (stage sync); commits them as the workspace's base if anything changed. Refused (busy) while a task runs.", s.syncWorkspace), busy...)),
		s.afterReconcile(mayFail(typed("sandbox/tasks/start", "Starts a task in the running sandbox: syncs first unless sync is false, then runs the agent (or command) as the sandbox user in /workspace, and answers once it started. Its events come as sandbox/task notifications. One task at a time per sandbox unless config.json maxTasks says more (busy).", s.startTask), busy...)),
		typed("sandbox/tasks/list", "The project's tasks, newest first, with their status (and how each ended).", s.listTasks),
		s.afterReconcile(mayFail(typed("sandbox/tasks/get", "A task and its events so far (the last 5,000 kept; droppedEvents counts those let go).", s.getTask), codeTaskNotFound)),
		s.afterReconcile(mayFail(typed("sandbox/tasks/cancel", "Ends a running task, every process it started (SIGTERM, then SIGKILL after 5 s), and answers once it ended; an ended task is answered as it is.", s.cancelTask), found...)),
		s.afterReconcile(mayFail(typed("sandbox/tasks/diff", "An ended task's change: its commit against the base it started from; the files with status, line counts and binary, and the unified patch (up to 8 MiB).", s.diffTask), append([]int64{codeBusy}, found...)...)),
		s.afterReconcile(mayFail(typed("sandbox/tasks/apply", "Writes an ended task's change (or the paths named) into the host project, the only method that does. If a file it touches changed on the host since the task's base, nothing is written and the answer is conflict naming every such path; a change that reaches outside the project is unsafe_change; a project that cannot be written is file_error; nothing is half-written.", s.applyTask), append([]int64{codeConflict, codeUnsafeChange, codeProjectFile, codeBusy}, found...)...)),
		s.afterReconcile(mayFail(typed("sandbox/tasks/discard", "Drops an ended task's change and puts /workspace back to its base (files .gitignore ignores stay). Refused (busy) while a task runs.", s.discardTask), append([]int64{codeBusy}, found...)...)),
	}
}

func (s *Server) syncWorkspace(ctx context.Context, sess *session, p projectParams) (workspace.Synced, error) {
	return s.svc.Tasks.Sync(ctx, string(p.ProjectPath), sess.syncProgress(ctx, string(p.ProjectPath)))
}

func (s *Server) startTask(ctx context.Context, sess *session, p taskStartParams) (taskStartResult, error) {
	req := tasks.StartRequest{
		ProjectPath: string(p.ProjectPath), Agent: p.Agent, Prompt: p.Prompt, Command: p.Command,
		Env: p.Env, NoSync: p.Sync != nil && !*p.Sync,
	}
	if p.Timeout != "" {
		d, err := time.ParseDuration(p.Timeout)
		if err != nil {
			return taskStartResult{}, &args.Error{Field: "timeout", Reason: fmt.Sprintf("must be a duration such as 30m, 2h or 90s; got %q", p.Timeout)}
		}
		req.Timeout = d
	}
	rec, err := s.svc.Tasks.Start(ctx, req, sess.syncProgress(ctx, req.ProjectPath))
	return taskStartResult{TaskID: rec.ID, Task: rec}, err
}

func (s *Server) listTasks(_ context.Context, _ *session, p projectParams) (taskListResult, error) {
	list, err := s.svc.Tasks.List(string(p.ProjectPath))
	return taskListResult{Tasks: list}, err
}

func (s *Server) getTask(ctx context.Context, _ *session, p taskParams) (tasks.Got, error) {
	return s.svc.Tasks.Get(ctx, p.TaskID)
}

func (s *Server) cancelTask(ctx context.Context, _ *session, p taskParams) (taskResult, error) {
	rec, err := s.svc.Tasks.Cancel(ctx, p.TaskID)
	return taskResult{Task: rec}, err
}

func (s *Server) diffTask(ctx context.Context, _ *session, p taskParams) (workspace.Diff, error) {
	return s.svc.Tasks.Diff(ctx, p.TaskID)
}

func (s *Server) applyTask(ctx context.Context, _ *session, p taskApplyParams) (taskApplyResult, error) {
	applied, err := s.svc.Tasks.Apply(ctx, p.TaskID, p.Paths)
	if applied == nil {
		applied = []string{}
	}
	return taskApplyResult{Applied: applied}, err
}

func (s *Server) discardTask(ctx context.Context, _ *session, p taskParams) (emptyResult, error) {
	return emptyResult{}, s.svc.Tasks.Discard(ctx, p.TaskID)
}

// syncProgress sends a sync's progress to this client as sandbox/progress
// (stage sync), in order and before the answer, as sandbox/output goes.
func (sess *session) syncProgress(ctx context.Context, project string) func(workspace.Progress) {
	if canonical, err := projectfs.Canonical(project); err == nil {
		project = canonical
	}
	return func(p workspace.Progress) {
		sess.conn.Notify(ctx, "sandbox/progress", service.Progress{
			ProjectPath: project, Stage: stageSync, Current: int(p.Bytes), Total: int(p.TotalBytes),
			Message: fmt.Sprintf("Synced %d of %d files, %.1f of %.1f MB", p.Files, p.TotalFiles, float64(p.Bytes)/1e6, float64(p.TotalBytes)/1e6),
		})
	}
}

// listenTasks makes the connection hear every task's events as
// sandbox/task; it returns the end of that.
func (s *Server) listenTasks(sess *session) (stop func()) {
	if s.svc.Tasks == nil {
		return func() {}
	}
	return s.svc.Tasks.Listen(func(n tasks.Notification) {
		sess.notify(notice{"sandbox/task", n})
	})
}
