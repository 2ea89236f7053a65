package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// newTasks is the process's task manager (docs/tasks.md): the manager's
// running sandboxes for the workspace and the runner, the user's state for
// manifests and records, config.json's maxTasks, the model gateway for
// the tasks' model calls (models.go). It starts nothing: serve and ui
// reattach to the tasks an earlier sidecar left running.
func newTasks(m *service.Manager, models tasks.Models, log zerolog.Logger) *tasks.Manager {
	return tasks.New(runningSandboxes{m}, tasks.Options{
		Runner:    resources.TaskRunner(),
		Workspace: workspace.Options{Program: resources.WorkspaceProgram(), StateDir: stateDir()},
		MaxTasks: func(string) int {
			policy, _, _ := m.Policy()
			return policy.MaxTasks
		},
		Models: models,
		Logger: log,
	})
}

// runningSandboxes gives the manager's running sandboxes as the workspace
// and the tasks see them (internal/dockertest's Sandboxes is the tests'
// copy).
type runningSandboxes struct{ m *service.Manager }

func (s runningSandboxes) Running(ctx context.Context, project string) (workspace.Sandbox, error) {
	st, err := s.m.Status(ctx, project)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return nil, service.ErrNoSandbox
	case st.Status == service.StatusPaused:
		return nil, service.ErrPaused
	case st.Status != service.StatusRunning:
		return nil, fmt.Errorf("%w (it is %s)", service.ErrNotRunning, st.Status)
	}
	return sandboxExec{m: s.m, project: st.ProjectPath, container: st.ContainerID}, nil
}

// sandboxExec runs the workspace's and the runner's commands in one
// sandbox, as its user (service's ExecArgv, which sets what every exec
// gets).
type sandboxExec struct {
	m                  *service.Manager
	project, container string
}

func (s sandboxExec) ContainerID() string { return s.container }

func (s sandboxExec) Exec(ctx context.Context, cmd workspace.Command) (workspace.Result, error) {
	res, err := s.m.ExecArgv(ctx, s.project, service.ExecSpec{
		Cmd: cmd.Argv, Env: cmd.Env, Stdin: cmd.Stdin, Stdout: cmd.Stdout,
		MaxOutput: cmd.MaxOutput, Timeout: cmd.Timeout, Cause: service.ExecCause{Task: taskOf(cmd.Env)},
	})
	return workspace.Result{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, Truncated: res.Truncated, TimedOut: res.TimedOut}, err
}

// taskOf is the task an exec is for, as its environment says
// (PILOT_TASK, which the tasks set on every exec of a task): the cause its
// connections are logged with.
func taskOf(env []string) string {
	for _, kv := range env {
		if id, ok := strings.CutPrefix(kv, "PILOT_TASK="); ok {
			return id
		}
	}
	return ""
}
