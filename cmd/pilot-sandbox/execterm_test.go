package main

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestExecOnATerminal is exec -t as docker exec -t, on the real engine,
// each run under script(1), which gives the CLI a pseudo-terminal: the
// command has a terminal of its own of the size given at the start and
// after a change (SIGWINCH), the host's terminal as it was after, an
// interactive shell takes a typed line, and
// the exit code is kept. Without a terminal on stdin, -t is refused.
func TestExecOnATerminal(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	env := append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "BIN="+binary)
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give the CLI a terminal")
	}
	start := exec.Command(binary, "start")
	start.Env, start.Dir = env, project
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("start: %v: %s", err, out)
	}
	// onTerminal runs line under sh on a pseudo-terminal, typing input.
	onTerminal := func(t *testing.T, line string, input ...string) (string, int) {
		t.Helper()
		cmd := exec.Command("timeout", "120", "script", "-qfec", line, "/dev/null")
		cmd.Env, cmd.Dir = env, project
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for _, in := range input {
				time.Sleep(2 * time.Second) // the shell is up and reads
				w.Write([]byte(in))
			}
			time.Sleep(2 * time.Second)
			w.Close()
		}()
		out, err := cmd.Output()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(out), "\r", ""), cmd.ProcessState.ExitCode()
	}
	t.Run("a terminal of its own, its size, the exit code", func(t *testing.T) {
		out, code := onTerminal(t, `stty cols 91 rows 33; was=$(stty -g); "$BIN" exec -t -- sh -c 'tty; stty size; exit 5'; code=$?; [ "$was" = "$(stty -g)" ] && echo restored; exit $code`)
		if !regexp.MustCompile(`(?m)^/dev/pts/\d+\n33 91\nrestored\n`).MatchString(out) || code != 5 {
			t.Errorf("exec -t: %q, exit %d; want its /dev/pts/N, 33 91, the terminal restored, exit 5", out, code)
		}
	})
	t.Run("a change of size", func(t *testing.T) {
		out, code := onTerminal(t, `stty cols 80 rows 24; "$BIN" exec -t -- sh -c 'sleep 4; stty size' </dev/tty & sleep 2; stty cols 50 rows 20; kill -WINCH $!; wait $!`)
		if !strings.Contains(out, "20 50\n") || code != 0 {
			t.Errorf("exec -t after a resize: %q, exit %d; want 20 50, exit 0", out, code)
		}
	})
	t.Run("an interactive shell takes a typed line", func(t *testing.T) {
		out, code := onTerminal(t, `"$BIN" exec -it -- sh`, "echo typed-$((6*7))\n", "exit 3\n")
		if !strings.Contains(out, "\ntyped-42\n") || code != 3 {
			t.Errorf("exec -it -- sh: %q, exit %d; want typed-42, exit 3", out, code)
		}
	})
	t.Run("no terminal", func(t *testing.T) {
		cmd := exec.Command(binary, "exec", "-t", "--", "true")
		cmd.Env, cmd.Dir = env, project
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "the input device is not a TTY") {
			t.Errorf("exec -t without a terminal: %v: %s", err, out)
		}
	})
}
