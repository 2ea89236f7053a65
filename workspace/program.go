package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Limits on what the in-container program says.
const (
	// maxAnswer bounds the JSON answer of receive, save and discard.
	maxAnswer = 64 << 10
	// maxStderr bounds what of its stderr an error quotes.
	maxStderr = 2 << 10
	// programTimeout bounds save and discard, which read the working tree
	// once; a sync or an apply is bounded by its caller's context.
	programTimeout = 10 * time.Minute
)

// exitStale is the program's exit status for a stream made against
// another base (resources/workspace/workspace.py, STALE).
const exitStale = 3

// errStale: the workspace's base is not the manifest's; a full sync mends it.
var errStale = errors.New("the workspace's base is not the manifest's")

// command is the program's argv for one of its commands: -I ignores the
// environment's Python settings, -S the site packages (it uses the
// standard library only, and starts sooner).
func (w *Workspace) command(args ...string) []string {
	return append([]string{"python3", "-I", "-S", "-c", string(w.opts.Program), "--dir", Dir}, args...)
}

// call runs one of the program's commands, bounded by programTimeout, and
// decodes its JSON answer into out.
func (w *Workspace) call(ctx context.Context, out any, args ...string) error {
	return w.callTimeout(ctx, programTimeout, nil, out, args...)
}

// callTimeout is call with stdin and a timeout of its own (0: ctx alone).
func (w *Workspace) callTimeout(ctx context.Context, timeout time.Duration, stdin io.Reader, out any, args ...string) error {
	res, err := w.sandbox.Exec(ctx, Command{
		Argv: w.command(args...), Stdin: stdin, MaxOutput: maxAnswer, Timeout: timeout,
	})
	if err != nil {
		return err
	}
	if err := programError(args[0], res); err != nil {
		return err
	}
	if err := json.Unmarshal(bytes.TrimSpace(res.Stdout), out); err != nil {
		return fmt.Errorf("workspace %s: its answer is not JSON: %w", args[0], err)
	}
	return nil
}

// programError is the error a finished command of the program means.
func programError(what string, res Result) error {
	switch {
	case res.TimedOut:
		return fmt.Errorf("workspace %s: it did not finish in time", what)
	case res.ExitCode == exitStale:
		return errStale
	case res.ExitCode != 0:
		return fmt.Errorf("workspace %s: %s", what, stderrText(res))
	case res.Truncated:
		return fmt.Errorf("workspace %s: its answer is longer than %d bytes", what, maxAnswer)
	}
	return nil
}

// stderrText is what a failed command said, bounded, or its exit status.
func stderrText(res Result) string {
	msg := strings.TrimSpace(string(bytes.ToValidUTF8(res.Stderr, []byte("?"))))
	msg = strings.TrimPrefix(msg, "pilot-workspace: ")
	if len(msg) > maxStderr {
		msg = msg[:maxStderr] + "…"
	}
	if msg == "" {
		msg = "exit status " + strconv.Itoa(res.ExitCode)
	}
	return msg
}

// quote is a path in a message.
func quote(p string) string { return strconv.Quote(p) }

// joinPaths lists up to n paths for a message, counting the rest.
func joinPaths(paths []string, n int) string {
	quoted := make([]string, 0, min(n, len(paths)))
	for _, p := range paths[:min(n, len(paths))] {
		quoted = append(quoted, quote(p))
	}
	s := strings.Join(quoted, ", ")
	if len(paths) > n {
		s += fmt.Sprintf(" and %d more", len(paths)-n)
	}
	return s
}
