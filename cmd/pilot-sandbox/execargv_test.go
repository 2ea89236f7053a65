package main

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestExecLikeDocker runs `pilot-sandbox exec` as a user would, on a real
// sandbox: argv as given (no shell joins or expands it), the command's
// exit code as its own, stdin with -i, --workdir, --env, and output that
// comes while the command still runs.
func TestExecLikeDocker(t *testing.T) {
	cli := newProjectCLI(t)
	command, run := cli.command, cli.run
	if _, errOut, code := run(nil, "start"); code != 0 {
		t.Fatalf("start: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		out   string
		code  int
	}{
		{"argv kept", "", []string{"printf", "%s|", "a b", "c"}, "a b|c|", 0},
		{"nothing expanded", "", []string{"echo", "$HOME", "*", "$(id)", ";", "exit", "3"}, "$HOME * $(id) ; exit 3\n", 0},
		{"the command's exit code", "", []string{"sh", "-c", "exit 7"}, "", 7},
		{"a program that is not there", "", []string{"no-such-program"}, "", 127},
		{"stdin with -i", "hello\n", []string{"-i", "--", "tr", "a-z", "A-Z"}, "HELLO\n", 0},
		{"no stdin without -i", "hello\n", []string{"cat"}, "", 0},
		{"workdir and env", "", []string{"--workdir", "/tmp", "--env", "A=one two", "--env", "B=$HOME", "--", "sh", "-c", `pwd; echo "$A|$B"`}, "/tmp\none two|$HOME\n", 0},
		{"the login environment", "", []string{"sh", "-c", `id -un; echo "$DISPLAY"`}, "sandbox\n:99\n", 0},
	} {
		args := append([]string{"exec"}, tc.args...)
		if tc.args[0] != "-i" && tc.args[0] != "--workdir" {
			args = append([]string{"exec", "--"}, tc.args...)
		}
		out, errOut, code := run(strings.NewReader(tc.stdin), args...)
		if out != tc.out || code != tc.code {
			t.Errorf("%s: %q, exit %d (stderr %q); want %q, exit %d", tc.name, out, code, errOut, tc.out, tc.code)
		}
	}

	// Output comes as it is written: the first line is read while the
	// command waits for the input that only that line's arrival sends.
	cmd := command(nil, "exec", "-i", "--", "sh", "-c", `echo first; read x; echo "got $x"`)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(stdout)
	first := make(chan string, 1)
	go func() { l, _ := lines.ReadString('\n'); first <- l }()
	select {
	case l := <-first:
		if l != "first\n" {
			t.Errorf("first line %q", l)
		}
	case <-time.After(time.Minute): // a guard against hanging, not a measure
		cmd.Process.Kill()
		t.Fatal("no output before the command's end")
	}
	io.WriteString(stdin, "second\n")
	stdin.Close()
	rest, _ := io.ReadAll(lines)
	if err := cmd.Wait(); err != nil || string(rest) != "got second\n" {
		t.Errorf("then %q, %v; want %q", rest, err, "got second\n")
	}
}

// TestPauseCommand: pause freezes the sandbox and says so, status shows
// it paused with the memory it holds, exec says it is paused and how to
// resume, and start resumes it.
func TestPauseCommand(t *testing.T) {
	cli := newProjectCLI(t)
	run := func(args ...string) (string, string, int) { return cli.run(nil, args...) }
	if _, errOut, code := run("start"); code != 0 {
		t.Fatalf("start: %d %s", code, errOut)
	}
	if out, errOut, code := run("pause"); code != 0 || !strings.Contains(out, ": paused\n") {
		t.Errorf("pause: %d %q %q", code, out, errOut)
	}
	if out, _, code := run("status"); code != 0 || !strings.Contains(out, "every window kept, holding ") || !strings.Contains(out, "pilot-sandbox start resumes it") {
		t.Errorf("status: %d %q", code, out)
	}
	if _, errOut, code := run("exec", "--", "true"); code != 1 || !strings.Contains(errOut, "paused") || !strings.Contains(errOut, "pilot-sandbox start") {
		t.Errorf("exec while paused: %d %q; want 1, saying it is paused and how to resume", code, errOut)
	}
	if out, errOut, code := run("start"); code != 0 || !strings.Contains(out, ": running\n") {
		t.Errorf("start of a paused sandbox: %d %q %q", code, out, errOut)
	}
	if out, _, code := run("exec", "--", "echo", "back"); code != 0 || out != "back\n" {
		t.Errorf("exec after the resume: %d %q", code, out)
	}
}

// TestServePause: sandbox/pause, its event, the methods that need a
// running sandbox saying it is paused, sandbox/close (pause, the
// default), and sandbox/start resuming, through the protocol.
func TestServePause(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	s := startSidecar(t, "lsp")
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	p := map[string]any{"projectPath": project}
	result(t, s.call("sandbox/start", p, 5*time.Minute))
	paused := result(t, s.call("sandbox/pause", p, time.Minute))
	if paused["status"] != "paused" || paused["memoryBytes"] == nil || paused["viewerUrl"] != "" {
		t.Errorf("sandbox/pause: %v", paused)
	}
	s.waitNotification("sandbox/event", func(params map[string]any) bool {
		st, _ := params["state"].(map[string]any)
		return params["projectPath"] == project && st["status"] == "paused"
	}, time.Minute)
	msg := s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "true"}, time.Minute)
	if e, _ := msg["error"].(map[string]any); errorKind(msg) != "not_running" || !strings.Contains(e["message"].(string), "paused") {
		t.Errorf("exec while paused: %v", msg)
	}
	result(t, s.call("sandbox/start", p, time.Minute))
	if closed := result(t, s.call("sandbox/close", p, time.Minute)); closed["status"] != "paused" {
		t.Errorf("sandbox/close: %v; want paused, the default closeAction", closed)
	}
	if st := result(t, s.call("sandbox/start", p, time.Minute)); st["status"] != "running" || st["viewerUrl"] == "" {
		t.Errorf("sandbox/start of the closed project: %v", st)
	}
}
