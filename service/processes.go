package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/shell"
)

// backgroundCallTimeout bounds the execs that start, list and kill
// background processes: each is a few shell builtins, plus up to 4 s of
// waiting for a killed process to go.
const backgroundCallTimeout = 30 * time.Second

// maxListOutput bounds what listing the processes reads: a line of about
// 300 bytes per process in the sandbox, whose number its pids limit caps.
const maxListOutput = 4 << 20

// BackgroundProcess is a command started in the background
// (PROTOCOL.md, sandbox/exec with background).
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
		Cmd: argv, WorkDir: req.WorkDir, Env: env, Stdin: stdinReader(req.Stdin),
		Timeout: backgroundCallTimeout, MaxOutput: 4096,
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
	if !hasPID(running, pid) {
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

func hasPID(ps []Process, pid int) bool {
	for _, p := range ps {
		if p.PID == pid {
			return true
		}
	}
	return false
}
