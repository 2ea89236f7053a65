package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// projectCLI runs the binary as a person at a terminal does: in a project
// of the test's own (its working directory), with a state directory of
// the test's own.
type projectCLI struct {
	project, state string
}

func newProjectCLI(t *testing.T) projectCLI {
	t.Helper()
	return projectCLI{project: dockertest.Project(t, dockertest.Engine(t)), state: t.TempDir()}
}

// command is the binary with args, reading stdin (nil: nothing).
func (c projectCLI) command(stdin io.Reader, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+c.state)
	cmd.Dir = c.project
	cmd.Stdin = stdin
	return cmd
}

// run runs the binary with args to its end: what it wrote and its exit
// code.
func (c projectCLI) run(stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	cmd := c.command(stdin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Run()
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}
