package tasks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// Limits of the runner's short commands.
const (
	maxStderr     = 4 << 10
	runnerTimeout = 30 * time.Second
	// exitNotRunning is the runner's exit status for a cancel of a task
	// that is not running; exitBusy for a start refused because as many
	// tasks as allowed run.
	exitNotRunning = 3
	exitBusy       = 4
)

// runnerArgv runs one of the runner's commands (resources/tasks/runner.py):
// -I ignores the environment's Python settings, -S the site packages (the
// runner uses the standard library only, and starts sooner), -u leaves its
// output unbuffered.
func (m *Manager) runnerArgv(args ...string) []string {
	return append([]string{"python3", "-I", "-S", "-u", "-c", string(m.opts.Runner)}, args...)
}

// runningIn asks the sandbox which tasks run in it, whichever sidecar
// started them.
func (m *Manager) runningIn(ctx context.Context, sb workspace.Sandbox) ([]string, error) {
	res, err := sb.Exec(ctx, workspace.Command{Argv: m.runnerArgv("running"), MaxOutput: 64 << 10, Timeout: runnerTimeout})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || res.Truncated {
		return nil, fmt.Errorf("list the sandbox's tasks: %s", stderrText(res))
	}
	var ids []string
	if err := json.Unmarshal(bytes.TrimSpace(res.Stdout), &ids); err != nil {
		return nil, fmt.Errorf("list the sandbox's tasks: %w", err)
	}
	return ids, nil
}

// saveChange commits the task's working tree, under the workspace's lock.
func (m *Manager) saveChange(sb workspace.Sandbox, rec Record) (string, error) {
	unlock := m.lock(sb.ContainerID())
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return m.workspace(sb, rec.ProjectPath).SaveTask(ctx, rec.ID, rec.Base)
}

// liveSandbox is the task's sandbox if it still runs the task's container.
func (m *Manager) liveSandbox(ctx context.Context, rec Record) workspace.Sandbox {
	sb, err := m.sandboxes.Running(ctx, rec.ProjectPath)
	if err != nil || sb.ContainerID() != rec.Container {
		return nil
	}
	return sb
}

// stderrText is what a failed command said, bounded, or its exit status.
func stderrText(res workspace.Result) string {
	msg := strings.TrimSpace(string(bytes.ToValidUTF8(res.Stderr, []byte("?"))))
	msg = strings.TrimPrefix(msg, "pilot-task: ")
	if msg == "" {
		return "exit status " + strconv.Itoa(res.ExitCode)
	}
	s, _ := cut(msg, maxStderr)
	return s
}

// readLine reads one line without its newline; a line longer than max is
// an error (the records' writer bounds them).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > max {
			return nil, errors.New("a runner record is longer than any it writes")
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (t *task) lastSeen() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastRecord
}
