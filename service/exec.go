package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/jsonsize"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Limits of sandbox/exec (PROTOCOL.md).
const (
	DefaultExecTimeout = 120 * time.Second
	MaxExecTimeout     = 600 * time.Second
	MaxExecOutput      = 10 << 20 // each of stdout and stderr, as read and as JSON encodes it
	// execGrace is how long after the in-container timeout the sidecar stops
	// waiting for the stream on its own (a child may still hold stdout).
	execGrace = 3 * time.Second
	// execOOMScore is the oom_score_adj of commands run with Exec.
	execOOMScore = 500
)

// ExecRequest is a shell command to run in a project's sandbox.
type ExecRequest struct {
	Command string
	Timeout time.Duration // 0 means DefaultExecTimeout
	WorkDir string        // "" means the sandbox user's home
}

// ExecOutput is how a shell command ended. A non-zero exit is a result, not
// an error.
type ExecOutput struct {
	ExitCode  int    `json:"exitCode"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	TimedOut  bool   `json:"timedOut"`
	Truncated bool   `json:"truncated"`
}

// Exec runs a command under bash -lc as the sandbox user, with DISPLAY set,
// bounded by its timeout. The command runs under timeout(1), which on expiry
// kills its whole process group; a program it started in the background with
// its output redirected keeps running after Exec returns.
func (m *Manager) Exec(ctx context.Context, path string, req ExecRequest) (ExecOutput, error) {
	timeout := req.Timeout
	switch {
	case req.Command == "":
		return ExecOutput{}, &ArgumentError{Name: "command", Reason: "must not be empty"}
	case timeout == 0:
		timeout = DefaultExecTimeout
	case timeout < 0 || timeout > MaxExecTimeout:
		return ExecOutput{}, &ArgumentError{Name: "timeoutMs", Reason: fmt.Sprintf("must be between 1 and %d", MaxExecTimeout.Milliseconds())}
	}
	secs := strconv.Itoa(int(math.Ceil(timeout.Seconds())))
	started := time.Now()
	res, err := m.ExecArgv(ctx, path, ExecSpec{
		// choom: if the sandbox runs out of memory, the kernel kills the
		// commands an agent ran before the desktop (and its agent), whose
		// score stays 0; raising one's own score takes no privilege.
		Cmd:       []string{"choom", "-n", strconv.Itoa(execOOMScore), "--", "timeout", "--kill-after=2", secs, "bash", "-lc", req.Command},
		WorkDir:   req.WorkDir,
		Timeout:   timeout + execGrace,
		MaxOutput: MaxExecOutput,
	})
	if err != nil {
		return ExecOutput{}, err
	}
	// timeout(1) exits 124 when it had to stop the command, 137 when it
	// had to kill it.
	expired := (res.ExitCode == 124 || res.ExitCode == 137) && time.Since(started) >= timeout
	// The cap holds for the reply too, whose JSON escapes a NUL byte in 6
	// bytes: 10 MiB of them made a 126 MB reply.
	stdout, cutOut := jsonsize.Cut(string(bytes.ToValidUTF8(res.Stdout, []byte("\uFFFD"))), MaxExecOutput)
	stderr, cutErr := jsonsize.Cut(string(bytes.ToValidUTF8(res.Stderr, []byte("\uFFFD"))), MaxExecOutput)
	return ExecOutput{
		ExitCode:  res.ExitCode,
		Stdout:    stdout,
		Stderr:    stderr,
		TimedOut:  res.TimedOut || expired,
		Truncated: res.Truncated || cutOut || cutErr,
	}, nil
}

// ExecArgv runs argv in the project's running sandbox as the sandbox user
// with DISPLAY set (spec.User and spec.Env add to that). It is the building
// block of the agent tools: no shell is involved.
func (m *Manager) ExecArgv(ctx context.Context, path string, spec ExecSpec) (ExecResult, error) {
	b, st, err := m.running(ctx, path)
	if err != nil {
		return ExecResult{}, err
	}
	if spec.User == "" {
		spec.User = desktop.User
	}
	// Docker sets HOME for the exec's user but not USER or LOGNAME, which
	// some programs read.
	spec.Env = append([]string{desktop.DisplayEnv, "USER=" + spec.User, "LOGNAME=" + spec.User}, spec.Env...)
	res, err := m.docker.Exec(ctx, st.ContainerID, spec)
	if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrContainerNotFound) {
		// The container went away since the state was read.
		m.recheck(ctx, b)
		return ExecResult{}, fmt.Errorf("%w: %v", ErrNotRunning, err)
	}
	return res, err
}

// running returns the project's state if its sandbox is running.
func (m *Manager) running(ctx context.Context, path string) (*box, State, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, State{}, err
	}
	b := m.box(project)
	st := b.snapshot()
	if (st == nil || st.Status != StatusRunning) && m.tryLockProject(b) {
		// Not known to be running: ask Docker rather than trust memory.
		st, err = m.refresh(ctx, b)
		m.unlockProject(b)
		if err != nil {
			return b, State{}, err
		}
	}
	switch {
	case st == nil:
		return b, State{}, ErrNoSandbox
	case st.Status != StatusRunning:
		return b, *st, fmt.Errorf("%w (it is %s)", ErrNotRunning, st.Status)
	}
	m.touch(b) // every exec and desktop call comes through here
	return b, *st, nil
}
