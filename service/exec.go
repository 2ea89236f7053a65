package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/jsonsize"
	"github.com/pilot-sandbox/pilot-sandbox/shell"
)

// Limits of sandbox/exec (docs/protocol.md).
const (
	DefaultExecTimeout = 120 * time.Second
	MaxExecTimeout     = 600 * time.Second
	MaxExecOutput      = 10 << 20 // each of stdout and stderr, as read and as JSON encodes it
	// execGrace is how long after the in-container timeout the sidecar stops
	// waiting for the stream on its own (the wrapper itself was killed).
	execGrace = 3 * time.Second
)

// Output streams, as ExecRequest.Output names them.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// ExecRequest is a shell command to run in a project's sandbox.
type ExecRequest struct {
	Command string
	// Argv, instead of Command, is a program and its arguments, run as
	// they are given (shell.ForegroundArgv); not for Background.
	Argv    []string
	Timeout time.Duration // 0 means DefaultExecTimeout
	WorkDir string        // "" means the sandbox user's home
	// Stdin is the command's standard input; without it, stdin is empty.
	// Input, instead, is one read as the command runs (a pipe, a terminal).
	Stdin *string
	Input io.Reader
	// Env adds to (and overrides) the command's environment.
	Env map[string]string
	// Output, when set, is called with the output as it comes, as text, in
	// order, each stream up to its cap; never after Exec returns.
	Output func(stream, text string)
	// Stdout and Stderr, when both set, take the output byte for byte as
	// it comes, without a cap, in place of the result's (a terminal).
	Stdout, Stderr io.Writer
	// Terminal, with Argv, Stdout and Stderr, runs the program on a
	// terminal of its own (ExecSpec.Terminal, shell.ForegroundTerminal).
	Terminal <-chan TerminalSize
	// Cause is what the command runs for: the hint of its connections
	// (Network.ExecEnv).
	Cause ExecCause
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
// kills its whole process group. Exec answers when the command itself
// ends: a program it started in the background keeps running, and what it
// writes after that is not read (shell.Finish).
func (m *Manager) Exec(ctx context.Context, path string, req ExecRequest) (ExecOutput, error) {
	timeout, err := execTimeout(req)
	if err != nil {
		return ExecOutput{}, err
	}
	env, err := execEnv(req.Env)
	if err != nil {
		return ExecOutput{}, err
	}
	seconds := int(math.Ceil(timeout.Seconds()))
	cmd := shell.Foreground(req.Command, seconds)
	if req.Argv != nil {
		cmd = shell.ForegroundArgv(req.Argv, seconds)
	}
	spec := ExecSpec{
		Cmd:       cmd,
		WorkDir:   req.WorkDir,
		Env:       env,
		Stdin:     stdinOf(req),
		Timeout:   timeout + execGrace,
		MaxOutput: MaxExecOutput,
		Cause:     req.Cause,
		Stdout:    req.Stdout,
		Stderr:    req.Stderr,
	}
	started := time.Now()
	var res ExecResult
	if req.Terminal != nil {
		spec.Cmd, spec.Terminal = shell.ForegroundTerminal(req.Argv, seconds), req.Terminal
		res, err = m.ExecArgv(ctx, path, spec)
	} else {
		res, err = m.execMarked(ctx, path, spec, req.Output)
	}
	if err != nil {
		return ExecOutput{}, err
	}
	// timeout(1) exits 124 when it had to stop the command, 137 when it
	// had to kill it.
	expired := (res.ExitCode == 124 || res.ExitCode == 137) && time.Since(started) >= timeout
	// The cap holds for the reply too, whose JSON escapes a NUL byte in 6
	// bytes: 10 MiB of them made a 126 MB reply.
	outText, cutOut := jsonsize.Cut(string(bytes.ToValidUTF8(res.Stdout, []byte("\uFFFD"))), MaxExecOutput)
	errText, cutErr := jsonsize.Cut(string(bytes.ToValidUTF8(res.Stderr, []byte("\uFFFD"))), MaxExecOutput)
	return ExecOutput{
		ExitCode:  res.ExitCode,
		Stdout:    outText,
		Stderr:    errText,
		TimedOut:  res.TimedOut || expired,
		Truncated: res.Truncated || cutOut || cutErr,
	}, nil
}

// execMarked runs spec.Cmd so that the call ends when the command does,
// not when the last holder of its output lets go (shell.Finish), passing
// its output to output (when set) as it comes, or, when spec.Stdout and
// Stderr are set, to them as it comes, in place of the result. Without
// it, an exec that leaves a child holding its output makes Docker hold
// the next execs' exit codes too, for 2 to 4 s (measured).
func (m *Manager) execMarked(ctx context.Context, path string, spec ExecSpec, output func(stream, text string)) (ExecResult, error) {
	stdout := shell.NewCollector(spec.MaxOutput, emitter(output, StreamStdout))
	stderr := shell.NewCollector(spec.MaxOutput, emitter(output, StreamStderr))
	outSink, errSink := io.Writer(stdout), io.Writer(stderr)
	if spec.Stdout != nil && spec.Stderr != nil {
		outSink, errSink = spec.Stdout, spec.Stderr
	}
	marker := shell.NewMarker()
	finish := shell.NewFinish(marker, outSink, errSink)
	spec.Cmd = shell.Marked(marker, spec.Cmd...)
	spec.Stdout, spec.Stderr, spec.Finished = finish.Stdout(), finish.Stderr(), finish.Done()
	res, err := m.ExecArgv(ctx, path, spec)
	if err != nil {
		return ExecResult{}, err
	}
	finish.Flush()
	stdout.Close()
	stderr.Close()
	if code, ok := finish.Status(); ok {
		res.ExitCode = code
	}
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = res.Truncated || stdout.Truncated() || stderr.Truncated()
	return res, nil
}

// execTimeout checks the request's command and timeout, and returns the
// timeout to use.
func execTimeout(req ExecRequest) (time.Duration, error) {
	if err := checkCommand(req); err != nil {
		return 0, err
	}
	switch {
	case req.Timeout == 0:
		return DefaultExecTimeout, nil
	case req.Timeout < 0 || req.Timeout > MaxExecTimeout:
		return 0, &ArgumentError{Name: "timeoutMs", Reason: fmt.Sprintf("must be between 1 and %d", MaxExecTimeout.Milliseconds())}
	}
	return req.Timeout, nil
}

// checkCommand says what is wrong with the request's command or argv.
func checkCommand(req ExecRequest) error {
	nul := func(a string) bool { return strings.ContainsRune(a, 0) }
	switch {
	case req.Argv == nil && req.Command == "":
		return &ArgumentError{Name: "command", Reason: "must not be empty"}
	case req.Argv != nil && (req.Command != "" || len(req.Argv) == 0 || req.Argv[0] == ""):
		return &ArgumentError{Name: "argv", Reason: "must name a program, and comes without command"}
	case slices.ContainsFunc(req.Argv, nul):
		return &ArgumentError{Name: "argv", Reason: "must not hold a NUL character"}
	case req.Terminal != nil && (req.Argv == nil || req.Stdout == nil || req.Stderr == nil):
		return &ArgumentError{Name: "terminal", Reason: "comes with argv and both output writers"}
	}
	return nil
}

// envName is what a shell takes for a variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// execEnv checks a request's environment and returns it as NAME=value, in
// name order.
func execEnv(env map[string]string) ([]string, error) {
	out := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		switch {
		case !envName.MatchString(name):
			return nil, &ArgumentError{Name: "env." + name, Reason: "is not a variable name: letters, digits and _, not starting with a digit"}
		case strings.ContainsRune(env[name], 0):
			return nil, &ArgumentError{Name: "env." + name, Reason: "must not hold a NUL character"}
		}
		out = append(out, name+"="+env[name])
	}
	return out, nil
}

// emitter is output's callback for one stream, or nil.
func emitter(output func(stream, text string), stream string) func(string) {
	if output == nil {
		return nil
	}
	return func(text string) { output(stream, text) }
}

// stdinOf is the exec's stdin: nil for none.
func stdinOf(req ExecRequest) io.Reader {
	switch {
	case req.Input != nil:
		return req.Input
	case req.Stdin != nil:
		return strings.NewReader(*req.Stdin)
	}
	return nil
}

// ExecArgv runs argv in the project's running sandbox as the sandbox user
// with DISPLAY set (spec.User and spec.Env add to that). It is the building
// block of the agent tools: no shell is involved.
func (m *Manager) ExecArgv(ctx context.Context, path string, spec ExecSpec) (ExecResult, error) {
	b, st, err := m.commandTarget(ctx, path)
	if err != nil {
		return ExecResult{}, err
	}
	if spec.User == "" {
		spec.User = desktop.User
	}
	// Docker sets HOME for the exec's user but not USER or LOGNAME, which
	// some programs read.
	spec.Env = append([]string{desktop.DisplayEnv, "USER=" + spec.User, "LOGNAME=" + spec.User}, spec.Env...)
	spec.Env = m.networkEnv(st, spec.Cause, spec.Env)
	res, err := m.docker.Exec(ctx, st.ContainerID, spec)
	if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrContainerNotFound) {
		// The container went away since the state was read.
		m.recheck(ctx, b)
		return ExecResult{}, fmt.Errorf("%w: %v", ErrNotRunning, err)
	}
	return res, err
}

// ExecAttachArgv starts argv in the project's running sandbox as the
// sandbox user, with its stdin and stdout attached, and returns at once.
func (m *Manager) ExecAttachArgv(ctx context.Context, path string, spec ExecSpec) (ExecSession, error) {
	_, st, err := m.commandTarget(ctx, path)
	if err != nil {
		return nil, err
	}
	if spec.User == "" {
		spec.User = desktop.User
	}
	spec.Env = m.networkEnv(st, spec.Cause, spec.Env)
	return m.docker.ExecAttach(ctx, st.ContainerID, spec)
}

// A command started in the background runs in a session of its own, with
// a record and a log file in the sandbox (package shell), so that any
// sidecar serving the sandbox, and one started later, sees it.

// backgroundCallTimeout bounds the execs that start, list and kill
// background processes: each is a few shell builtins, plus up to 4 s of
// waiting for a killed process to go.
const backgroundCallTimeout = 30 * time.Second

// maxListOutput bounds what listing the processes reads: a line of about
// 300 bytes per process in the sandbox, whose number its pids limit caps.
const maxListOutput = 4 << 20

// BackgroundProcess is a command started in the background
// (docs/protocol.md, sandbox/exec with background).
type BackgroundProcess struct {
	PID     int    `json:"pid"`
	LogPath string `json:"logPath"`
}

// Process is a background process that runs (sandbox/processes).
type Process = shell.Process

// Background starts a command under bash -lc as the sandbox user, in a
// session of its own, and returns at once; its output goes to a log file
// in the sandbox. It has no timeout: Kill ends it.
func (m *Manager) Background(ctx context.Context, path string, req ExecRequest) (BackgroundProcess, error) {
	if req.Command == "" {
		return BackgroundProcess{}, &ArgumentError{Name: "command", Reason: "must not be empty"}
	}
	env, err := execEnv(req.Env)
	if err != nil {
		return BackgroundProcess{}, err
	}
	now := time.Now()
	rec := shell.Record{Command: req.Command, StartedAt: now.UnixMilli(), LogPath: shell.LogPath(backgroundID(now))}
	argv, err := shell.Background(req.Command, rec, req.Stdin != nil)
	if err != nil {
		return BackgroundProcess{}, err
	}
	res, err := m.execMarked(ctx, path, ExecSpec{
		Cmd: argv, WorkDir: req.WorkDir, Env: env, Stdin: stdinOf(req),
		Timeout: backgroundCallTimeout, MaxOutput: 4096, Cause: req.Cause,
	}, nil)
	if err != nil {
		return BackgroundProcess{}, err
	}
	if res.ExitCode != 0 {
		return BackgroundProcess{}, fmt.Errorf("start in the background: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	pid, err := shell.ParsePID(res.Stdout)
	if err != nil {
		return BackgroundProcess{}, err
	}
	return BackgroundProcess{PID: pid, LogPath: rec.LogPath}, nil
}

// backgroundID names a background process's log: when it started, and
// random bits to tell apart two started in one millisecond.
func backgroundID(now time.Time) string {
	b := make([]byte, 4)
	rand.Read(b)
	return now.UTC().Format("20060102-150405.000") + "-" + hex.EncodeToString(b)
}

// Processes lists the background processes started through a sidecar that
// still run in the project's sandbox, and forgets those that ended.
func (m *Manager) Processes(ctx context.Context, path string) ([]Process, error) {
	res, err := m.execMarked(ctx, path, ExecSpec{Cmd: shell.List(), Timeout: backgroundCallTimeout, MaxOutput: maxListOutput}, nil)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("list background processes: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	running, stale := shell.ParseList(res.Stdout)
	if len(stale) > 0 {
		// Best effort: a record left now is left out again next time.
		m.execMarked(ctx, path, ExecSpec{Cmd: shell.Forget(stale), Timeout: backgroundCallTimeout}, nil)
	}
	if running == nil {
		running = []Process{}
	}
	return running, nil
}

// Kill ends a background process started through a sidecar, and every
// process it started: SIGTERM, then SIGKILL to what is left after 2 s.
// A pid that is not such a process, running, is an ArgumentError.
func (m *Manager) Kill(ctx context.Context, path string, pid int) error {
	running, err := m.Processes(ctx, path)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(running, func(p Process) bool { return p.PID == pid }) {
		return &ArgumentError{Name: "pid", Reason: fmt.Sprintf("no background process started through the sidecar runs with pid %d (sandbox/processes lists them)", pid)}
	}
	res, err := m.execMarked(ctx, path, ExecSpec{Cmd: shell.Kill(pid), Timeout: backgroundCallTimeout}, nil)
	switch {
	case err != nil:
		return err
	case res.ExitCode == 0 || res.ExitCode == shell.KillNoneRan:
		return nil
	case res.ExitCode == shell.KillOutlived:
		return fmt.Errorf("process %d: some of its processes outlived SIGKILL", pid)
	}
	return fmt.Errorf("kill process %d: exit %d: %s", pid, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
}
