package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

func numberedLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

var cutLine = regexp.MustCompile(`\n\[\.\.\. (\d+) characters \((\d+) lines\) cut here; the whole output is in (/tmp/pilot-exec/[0-9a-f.-]+\.log) in the sandbox \(sed -n '1,100p' /tmp/pilot-exec/[0-9a-f.-]+\.log, grep -n WORD /tmp/pilot-exec/[0-9a-f.-]+\.log\) \.\.\.\]\n`)

func TestLongExecOutputIsCutAndKeptWhole(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  service.ExecOutput
	}{
		{"long stdout", service.ExecOutput{Stdout: numberedLines(1, 20000), Stderr: "warning: at the end\n"}},
		{"long stderr", service.ExecOutput{ExitCode: 1, Stdout: "built\n", Stderr: numberedLines(1, 5000)}},
		{"one long line", service.ExecOutput{Stdout: strings.Repeat("é", 50000)}},
	} {
		sb := &fakeSandbox{display: desktop.DefaultDisplay, out: tc.out}
		got := textOf(call(t, sb, "sandbox_exec", `{"command": "make"}`))
		whole := execReport(tc.out, 120)
		m := cutLine.FindStringSubmatch(got)
		if m == nil {
			t.Fatalf("%s: no line saying what was cut in %q…", tc.name, got[:200])
		}
		if n := len([]rune(got)); n > maxExecText {
			t.Errorf("%s: %d characters, want at most %d", tc.name, n, maxExecText)
		}
		if sb.files[m[3]] != whole {
			t.Errorf("%s: the file %s holds %d bytes, want the whole report's %d", tc.name, m[3], len(sb.files[m[3]]), len(whole))
		}
		head, tail, _ := strings.Cut(got, m[0])
		cut := strings.TrimSuffix(strings.TrimPrefix(whole, head), tail)
		if !strings.HasPrefix(whole, head) || !strings.HasSuffix(whole, tail) || fmt.Sprint(len([]rune(cut))) != m[1] ||
			fmt.Sprint(strings.Count(cut, "\n")) != m[2] {
			t.Errorf("%s: the head and tail are not the report's, or the line miscounts what is between (%s, %s)", tc.name, m[1], m[2])
		}
		if !strings.HasPrefix(head, "Exit code") || len([]rune(head)) < maxExecText/3 || len([]rune(tail)) < maxExecText/3 {
			t.Errorf("%s: head %d and tail %d characters", tc.name, len([]rune(head)), len([]rune(tail)))
		}
		if strings.Contains(tc.out.Stdout, "\n") && (!strings.HasSuffix(head, "\n") || !strings.HasPrefix(tail, "line ")) {
			t.Errorf("%s: not cut at line ends: …%q | %q…", tc.name, head[len(head)-20:], tail[:20])
		}
	}
}

func TestShortExecOutputIsWholeAndKeptNowhere(t *testing.T) {
	out := service.ExecOutput{Stdout: strings.Repeat("x", maxExecText-100)}
	sb := &fakeSandbox{display: desktop.DefaultDisplay, out: out}
	if got := textOf(call(t, sb, "sandbox_exec", `{"command": "make"}`)); got != execReport(out, 120) || len(sb.files) != 0 {
		t.Errorf("%d characters, files %v", len(got), len(sb.files))
	}
}

// blockedSandbox is a sandbox whose network policy refused something.
type blockedSandbox struct {
	*fakeSandbox
	lines []string // what NetworkBlocked answers, one call each
	cause service.ExecCause
}

func (b *blockedSandbox) NetworkBlocked(string) string {
	if len(b.lines) == 0 {
		return ""
	}
	line := b.lines[0]
	b.lines = b.lines[1:]
	return line
}

func (b *blockedSandbox) Exec(ctx context.Context, p string, r service.ExecRequest) (service.ExecOutput, error) {
	b.cause = r.Cause
	return b.fakeSandbox.Exec(ctx, p, r)
}

// TestExecSaysWhatWasBlocked: sandbox_exec's result ends with the line
// naming what the network policy refused since the last result, once;
// the command runs with the tool as its cause.
func TestExecSaysWhatWasBlocked(t *testing.T) {
	const line = "Network: pilot-sandbox blocked example.org:443. Only the user can allow a destination: ask them."
	sb := &blockedSandbox{fakeSandbox: &fakeSandbox{display: desktop.DefaultDisplay, out: service.ExecOutput{Stdout: "done\n"}}, lines: []string{line}}
	set := newSet(sb)
	run := func(args string) string {
		res, err := set.Call(context.Background(), "/p", "sandbox_exec", json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return textOf(res)
	}
	if got := run(`{"command": "curl https://example.org"}`); !strings.HasSuffix(got, "\n\n"+line) {
		t.Errorf("the first result: %q", got)
	}
	if got := run(`{"command": "true"}`); strings.Contains(got, "Network:") {
		t.Errorf("the second result names it again: %q", got)
	}
	if sb.cause.Tool != "sandbox_exec" {
		t.Errorf("the command's cause: %+v", sb.cause)
	}
}
