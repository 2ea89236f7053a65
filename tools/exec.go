package tools

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Bounds of sandbox_exec's timeoutSeconds: the service's, in seconds.
const (
	maxExecSeconds     = int(service.MaxExecTimeout / time.Second)
	defaultExecSeconds = int(service.DefaultExecTimeout / time.Second)
)

// maxExecText bounds what sandbox_exec returns to a model, in characters
// (about 4,000 tokens): a build log or a find over a tree would otherwise
// fill its context. The whole report goes to a file in the sandbox.
const maxExecText = 16000

// execLogDir is where, in the sandbox, the whole report of a command whose
// answer was cut is kept.
const execLogDir = "/tmp/pilot-exec"

// execOutputCap is the service's cap on each of stdout and stderr, as a
// reader says it.
var execOutputCap = fmt.Sprintf("%d MiB", service.MaxExecOutput>>20)

type execArgs struct {
	Command        string `json:"command" jsonschema:"The shell command."`
	TimeoutSeconds int    `json:"timeoutSeconds,omitzero" jsonschema:"Seconds before the command is killed."`
}

func (execArgs) TuneSchema(s *jsonschema.Schema) {
	textBounds(s, "command", 1, MaxTextLength)
	bound(s.Properties["timeoutSeconds"], 1, float64(maxExecSeconds))
	s.Properties["timeoutSeconds"].Default = jsonInt(defaultExecSeconds)
}

func execTool(sb Sandbox) tool {
	desc := fmt.Sprintf("Run a shell command in the sandbox (bash -lc, as its unprivileged user, with DISPLAY set so GUI "+
		"programs open on its screen). Returns the exit code, stdout and stderr; past %d characters, only their "+
		"start and end, and the path of a file in the sandbox holding all of it (read it with sed -n or grep). The "+
		"answer comes when the command ends, even if it left a program running in the background. To run a server "+
		"or a GUI program that keeps running, background it with its output in a file: "+
		"npm run dev >/tmp/dev.log 2>&1 & (then read the log to see it is up). "+
		"The sandbox has a web browser (Chromium): pilot-open URL opens a page in it on the screen (a new tab when it "+
		"runs) and returns at once; serve the app inside the sandbox and open http://localhost:PORT/. Ports the user "+
		"forwarded reach the user's own dev server on their machine at localhost:PORT, so a page opened in the "+
		"sandbox can test it too. timeoutSeconds: 1 to %d (default %d); the command is killed when it runs out.",
		maxExecText, maxExecSeconds, defaultExecSeconds)
	return define("sandbox_exec", desc, runs, func(ctx context.Context, project string, a execArgs) (Result, error) {
		out, err := sb.Exec(ctx, project, service.ExecRequest{
			Command: a.Command,
			Timeout: time.Duration(a.TimeoutSeconds) * time.Second,
			Cause:   service.ExecCause{Tool: "sandbox_exec"},
		})
		if err != nil {
			return Result{}, err
		}
		report := execReport(out, a.TimeoutSeconds)
		if nb, ok := sb.(networkBlocked); ok {
			if line := nb.NetworkBlocked(project); line != "" {
				report += "\n\n" + line
			}
		}
		if len([]rune(report)) <= maxExecText {
			return Text(report), nil
		}
		return Text(cutReport(report, keepExecLog(ctx, sb, project, report))), nil
	})
}

// networkBlocked is what a Sandbox with a network policy tells of it
// (*service.Manager): one line naming what was refused since the last
// look, which the model sees at the end of the next sandbox_exec result.
type networkBlocked interface {
	NetworkBlocked(project string) string
}

func execReport(out service.ExecOutput, timeout int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Exit code %d.", out.ExitCode)
	if out.TimedOut {
		fmt.Fprintf(&b, " The command was killed after %d seconds.", timeout)
	}
	if out.Truncated {
		fmt.Fprintf(&b, " Output was cut at %s.", execOutputCap)
	}
	for _, s := range []struct{ name, text string }{{"stdout", out.Stdout}, {"stderr", out.Stderr}} {
		if s.text != "" {
			fmt.Fprintf(&b, "\n\n%s:\n%s", s.name, s.text)
		}
	}
	return b.String()
}

// keepExecLog writes the whole report to a new file in the sandbox, as its
// user, and says where: "" when it could not.
func keepExecLog(ctx context.Context, sb Sandbox, project, report string) string {
	name := path.Join(execLogDir, fmt.Sprintf("%s-%04x.log", time.Now().UTC().Format("20060102-150405.000"), rand.N(1<<16)))
	res, err := sb.ExecArgv(ctx, project, service.ExecSpec{
		Cmd:     []string{"sh", "-c", `mkdir -p "$1" && cat > "$2"`, "sh", execLogDir, name},
		Stdin:   strings.NewReader(report),
		Timeout: 30 * time.Second,
	})
	if err != nil || res.ExitCode != 0 {
		return ""
	}
	return name
}

// cutReport keeps the start and the end of a report, whole lines where it
// can, within maxExecText characters, and says in between what was cut and
// where the whole is.
func cutReport(report, file string) string {
	r := []rune(report)
	where := "the whole output could not be saved in the sandbox"
	if file != "" {
		where = "the whole output is in " + file + " in the sandbox (sed -n '1,100p' " + file + ", grep -n WORD " + file + ")"
	}
	marker := func(cut, lines int) string {
		return fmt.Sprintf("\n[... %d characters (%d lines) cut here; %s ...]\n", cut, lines, where)
	}
	room := maxExecText - len([]rune(marker(len(r), len(r))))
	head := lineEnd(r, room/2)
	tail := lineStart(r, len(r)-(room-head))
	cut := string(r[head:tail])
	return string(r[:head]) + marker(len(r[head:tail]), strings.Count(cut, "\n")) + string(r[tail:])
}

// lineEnd is where the head ending at n should end: after the last newline
// in its last quarter, else at n.
func lineEnd(r []rune, n int) int {
	for i := n; i > n*3/4; i-- {
		if r[i-1] == '\n' {
			return i
		}
	}
	return n
}

// lineStart is where the tail starting at n should start: after the first
// newline in its first quarter, else at n.
func lineStart(r []rune, n int) int {
	limit := n + (len(r)-n)/4
	for i := n; i < limit; i++ {
		if r[i] == '\n' {
			return i + 1
		}
	}
	return n
}
