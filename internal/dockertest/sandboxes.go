package dockertest

import (
	"context"
	"fmt"

	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// Sandboxes gives a manager's running sandboxes as the workspace and the
// tasks see them (tasks.Sandboxes).
type Sandboxes struct {
	M *service.Manager
}

// Running is the project's sandbox if it runs.
func (s Sandboxes) Running(ctx context.Context, project string) (workspace.Sandbox, error) {
	st, err := s.M.Status(ctx, project)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return nil, service.ErrNoSandbox
	case st.Status != service.StatusRunning:
		return nil, fmt.Errorf("%w (it is %s)", service.ErrNotRunning, st.Status)
	}
	return Sandbox{M: s.M, Project: project, Container: st.ContainerID}, nil
}

// Sandbox is one running sandbox as a workspace.Sandbox.
type Sandbox struct {
	M         *service.Manager
	Project   string
	Container string
}

// ContainerID is the sandbox's container.
func (s Sandbox) ContainerID() string { return s.Container }

// Exec runs a command in the sandbox as its user.
func (s Sandbox) Exec(ctx context.Context, cmd workspace.Command) (workspace.Result, error) {
	res, err := s.M.ExecArgv(ctx, s.Project, service.ExecSpec{
		Cmd: cmd.Argv, Env: cmd.Env, Stdin: cmd.Stdin, Stdout: cmd.Stdout,
		MaxOutput: cmd.MaxOutput, Timeout: cmd.Timeout,
	}) // as cmd/pilot-sandbox's sandboxExec does, less the cause of its connections
	return workspace.Result{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, Truncated: res.Truncated, TimedOut: res.TimedOut}, err
}
