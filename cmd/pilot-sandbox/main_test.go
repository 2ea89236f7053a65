package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// binary is the pilot-sandbox built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	// Every sidecar these tests run sees only these tests' sandboxes: not
	// a user's, and not those of other packages' tests running at the same
	// time, which a sidecar would otherwise adopt (and carry their network
	// with its own judge, in place of the test's).
	os.Setenv("PILOT_SCOPE", dockertest.TestScope+"-cmd")
	dir, err := os.MkdirTemp("", "pilot-sandbox-e2e")
	if err != nil {
		panic(err)
	}
	// Nor the user's lifecycle policy: a policy of their own for the tests
	// that need one, none for the others, whose sandboxes may run beside
	// many more of other tests'.
	os.Setenv("XDG_CONFIG_HOME", writeConfig(dir, "no-policy", `{"idleStop": "0", "maxRunning": 0, "disk": "0"}`))
	binary = filepath.Join(dir, "pilot-sandbox")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeConfig makes an XDG config directory under dir whose
// pilot-sandbox/config.json holds config, and returns it.
func writeConfig(dir, name, config string) string {
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Join(home, "pilot-sandbox"), 0o700); err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(home, "pilot-sandbox", "config.json"), []byte(config), 0o600); err != nil {
		panic(err)
	}
	return home
}

// sidecar is a running `pilot-sandbox serve` with the test as its client.
type sidecar struct {
	t       testing.TB
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	framing string
	msgs    chan map[string]any
	raw     chan error // the stdout reader's verdict once stdout ends
	stderr  bytes.Buffer
	nextID  int
	pending []map[string]any // notifications read while waiting for a response
}

func startSidecar(t testing.TB, framing string, env ...string) *sidecar {
	t.Helper()
	s := &sidecar{t: t, framing: framing, msgs: make(chan map[string]any, 1000), raw: make(chan error, 1)}
	s.cmd = exec.Command(binary, "serve", "--framing", framing)
	s.cmd.Env = append(os.Environ(), append([]string{"XDG_STATE_HOME=" + t.TempDir()}, env...)...)
	s.cmd.Stderr = &s.stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.raw <- s.readFrames(stdout) }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		if t.Failed() {
			t.Logf("sidecar stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

// readFrames parses stdout strictly: every byte must belong to a frame of the
// chosen framing holding one JSON-RPC 2.0 message.
func (s *sidecar) readFrames(stdout io.Reader) error {
	defer close(s.msgs)
	r := bufio.NewReader(stdout)
	for {
		var body []byte
		if s.framing == "ndjson" {
			line, err := r.ReadBytes('\n')
			if err == io.EOF && len(line) == 0 {
				return nil
			}
			if err != nil {
				return fmt.Errorf("stdout ends inside a line: %q", line)
			}
			body = line
		} else {
			header, err := r.ReadString('\n')
			if err == io.EOF && header == "" {
				return nil
			}
			n, ok := strings.CutPrefix(header, "Content-Length: ")
			if err != nil || !ok || !strings.HasSuffix(n, "\r\n") {
				return fmt.Errorf("stdout holds something that is not a frame header: %q", header)
			}
			length, err := strconv.Atoi(strings.TrimSuffix(n, "\r\n"))
			if blank, _ := r.ReadString('\n'); err != nil || blank != "\r\n" {
				return fmt.Errorf("bad frame header %q", header)
			}
			body = make([]byte, length)
			if _, err := io.ReadFull(r, body); err != nil {
				return fmt.Errorf("frame body: %v", err)
			}
		}
		var msg map[string]any
		if err := json.Unmarshal(body, &msg); err != nil || msg["jsonrpc"] != "2.0" {
			return fmt.Errorf("stdout frame is not a JSON-RPC message: %q", body)
		}
		s.msgs <- msg
	}
}

// peakRSS is the sidecar's peak resident memory so far, as the kernel
// counts it (VmHWM), or why it cannot be read.
func (s *sidecar) peakRSS() string {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func (s *sidecar) write(msg map[string]any) {
	s.t.Helper()
	msg["jsonrpc"] = "2.0"
	body, _ := json.Marshal(msg)
	var frame []byte
	if s.framing == "ndjson" {
		frame = append(body, '\n')
	} else {
		frame = append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...)
	}
	if _, err := s.stdin.Write(frame); err != nil {
		s.t.Fatalf("write: %v", err)
	}
}

// call sends a request and waits for its response, keeping notifications.
func (s *sidecar) call(method string, params any, timeout time.Duration) map[string]any {
	s.t.Helper()
	s.nextID++
	id := float64(s.nextID)
	s.write(map[string]any{"id": id, "method": method, "params": params})
	deadline := time.After(timeout)
	for {
		select {
		case msg, ok := <-s.msgs:
			if !ok {
				s.t.Fatalf("%s: stdout ended: %v", method, <-s.raw)
			}
			if msg["id"] == id && msg["method"] == nil {
				return msg
			}
			s.pending = append(s.pending, msg)
		case <-deadline:
			s.t.Fatalf("%s: no answer within %s", method, timeout)
		}
	}
}

func (s *sidecar) notifications(method string) []map[string]any {
	var out []map[string]any
	for _, m := range s.pending {
		if m["method"] == method {
			out = append(out, m["params"].(map[string]any))
		}
	}
	return out
}

// waitNotification returns the first notification of method whose params
// satisfy match, reading on until one comes.
func (s *sidecar) waitNotification(method string, match func(params map[string]any) bool, timeout time.Duration) map[string]any {
	s.t.Helper()
	for i, m := range s.pending {
		if p, ok := m["params"].(map[string]any); ok && m["method"] == method && match(p) {
			s.pending = append(s.pending[:i:i], s.pending[i+1:]...)
			return p
		}
	}
	deadline := time.After(timeout)
	for {
		select {
		case msg, ok := <-s.msgs:
			if !ok {
				s.t.Fatalf("waiting for %s: stdout ended: %v", method, <-s.raw)
			}
			if p, ok := msg["params"].(map[string]any); ok && msg["method"] == method && match(p) {
				return p
			}
			s.pending = append(s.pending, msg)
		case <-deadline:
			s.t.Fatalf("no %s notification within %s", method, timeout)
		}
	}
}

func result(t *testing.T, msg map[string]any) map[string]any {
	t.Helper()
	if msg["error"] != nil {
		t.Fatalf("error: %v", msg["error"])
	}
	r, _ := msg["result"].(map[string]any)
	return r
}

func (s *sidecar) wait() int {
	s.t.Helper()
	// Read stdout to its end before Wait, which closes the pipe.
	select {
	case err := <-s.raw:
		if err != nil {
			s.t.Error(err)
		}
	case <-time.After(30 * time.Second):
		s.t.Fatal("the sidecar did not close its stdout")
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.t.Fatal("the sidecar did not exit")
	}
	return s.cmd.ProcessState.ExitCode()
}

func TestServeRunsASandboxOverStdio(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	s := startSidecar(t, "lsp")

	init := result(t, s.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "e2e", "version": "1"}}, 10*time.Second))
	if init["protocolVersion"] != 1.0 || init["docker"].(map[string]any)["available"] != true {
		t.Fatalf("initialize: %v", init)
	}
	st := result(t, s.call("sandbox/start", map[string]any{"projectPath": project + "/"}, 5*time.Minute))
	if st["status"] != "running" || st["projectPath"] != project || st["wsPort"].(float64) == 0 {
		t.Fatalf("start: %v", st)
	}
	stages := map[string]bool{}
	for _, p := range s.notifications("sandbox/progress") {
		stages[p["stage"].(string)] = true
	}
	if !stages["create"] || !stages["start"] || !stages["ready"] {
		t.Errorf("progress stages seen: %v", stages)
	}
	events := s.notifications("sandbox/event")
	if len(events) == 0 || events[len(events)-1]["state"].(map[string]any)["status"] != "running" {
		t.Errorf("events: %v", events)
	}
	out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "echo hi; exit 4"}, time.Minute))
	if out["stdout"] != "hi\n" || out["exitCode"] != 4.0 {
		t.Errorf("exec: %v", out)
	}
	shot := result(t, s.call("sandbox/screenshot", map[string]any{"projectPath": project}, time.Minute))
	if shot["mimeType"] != "image/png" || shot["width"] != 1280.0 || len(shot["data"].(string)) < 1000 {
		t.Errorf("screenshot: %v", shot["width"])
	}
	if on := result(t, s.call("sandbox/setToolsEnabled", map[string]any{"projectPath": project, "enabled": true}, 10*time.Second)); on["enabled"] != true {
		t.Errorf("setToolsEnabled: %v", on)
	}
	if settings, _ := os.ReadFile(filepath.Join(project, ".pilot", "settings.json")); !bytes.Contains(settings, []byte(`"dockerToolsEnabled": true`)) {
		t.Errorf("settings.json = %s", settings)
	}
	stopped := result(t, s.call("sandbox/stop", map[string]any{"projectPath": project}, time.Minute))
	if stopped["status"] != "stopped" {
		t.Errorf("stop: %v", stopped)
	}
	if msg := s.call("shutdown", nil, 10*time.Second); msg["error"] != nil {
		t.Errorf("shutdown: %v", msg)
	}
	s.write(map[string]any{"method": "exit"})
	if code := s.wait(); code != 0 {
		t.Errorf("exit code %d after shutdown", code)
	}
}

func TestServeAnswersEverythingBeforeExitingAtEndOfInput(t *testing.T) {
	s := startSidecar(t, "ndjson", "DOCKER_HOST=unix:///nonexistent/docker.sock")
	for i := 1; i <= 3; i++ {
		s.write(map[string]any{"id": i, "method": "docker/status"})
	}
	s.stdin.Write([]byte("not json\n"))
	s.stdin.Close()
	var answered []float64
	for msg := range s.msgs {
		if id, ok := msg["id"].(float64); ok {
			answered = append(answered, id)
		}
	}
	if len(answered) != 3 {
		t.Errorf("answered ids %v, want 1, 2 and 3", answered)
	}
	if code := s.wait(); code != 0 {
		t.Errorf("exit code %d at end of input", code)
	}
}

func TestServeWithoutDockerSaysWhatToDo(t *testing.T) {
	s := startSidecar(t, "lsp", "DOCKER_HOST=unix:///nonexistent/docker.sock")
	dockerStatus := result(t, s.call("initialize", map[string]any{}, 20*time.Second))["docker"].(map[string]any)
	if dockerStatus["available"] != false || !strings.Contains(dockerStatus["error"].(string), "start Docker") {
		t.Errorf("docker status: %v", dockerStatus)
	}
	msg := s.call("sandbox/start", map[string]any{"projectPath": t.TempDir()}, 20*time.Second)
	e, _ := msg["error"].(map[string]any)
	if e == nil || e["code"] != -32001.0 || e["data"].(map[string]any)["kind"] != "docker_unavailable" {
		t.Errorf("start without Docker: %v", msg)
	}
	s.write(map[string]any{"method": "exit"})
	if code := s.wait(); code != 1 {
		t.Errorf("exit without shutdown: code %d, want 1", code)
	}
}

func TestCommandLine(t *testing.T) {
	cli := newProjectCLI(t)
	project := cli.project
	run := func(args ...string) (string, int) {
		t.Helper()
		out, errOut, code := cli.run(nil, args...)
		if code != 0 {
			t.Logf("%v: %s", args, errOut)
		}
		return out, code
	}
	if out, code := run("start"); code != 0 || !strings.Contains(out, "control    http://127.0.0.1:") || !strings.Contains(out, "/pilot/viewer.html#password=") {
		t.Fatalf("start (in the project directory): %d\n%s", code, out)
	}
	out, code := run("status", "--project", project, "--json")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st["status"] != "running" || st["imageVariant"] != "desktop" {
		t.Errorf("status --json: %d %s", code, out)
	}
	// Which image it runs, in words (PILOT_DEFAULT_IMAGE=desktop in tests).
	if out, code := run("status"); code != 0 || !strings.Contains(out, "\n  image      desktop, ") {
		t.Errorf("status: %d %s", code, out)
	}
	if out, code := run("list"); code != 0 || !strings.Contains(out, "running   desktop    "+project) {
		t.Errorf("list: %d %s", code, out)
	}
	if out, code := run("exec", "--", "sh", "-c", "echo $((6*7)); exit 3"); code != 3 || out != "42\n" {
		t.Errorf("exec: code %d, out %q", code, out)
	}
	shot := filepath.Join(t.TempDir(), "s.png")
	if _, code := run("screenshot", "-o", shot); code != 0 {
		t.Error("screenshot failed")
	} else if data, _ := os.ReadFile(shot); !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Error("screenshot is not a PNG")
	}
	toolShot := filepath.Join(t.TempDir(), "tool.png")
	if out, code := run("tool", "sandbox_screenshot", "-o", toolShot); code != 0 || !strings.Contains(out, "1280x800") {
		t.Errorf("tool sandbox_screenshot: %d %s", code, out)
	} else if data, _ := os.ReadFile(toolShot); !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Error("tool sandbox_screenshot wrote no PNG")
	}
	if out, code := run("tool", "sandbox_exec", `{"command": "echo $((6*7))"}`); code != 0 || !strings.Contains(out, "42") {
		t.Errorf("tool sandbox_exec: %d %s", code, out)
	}
	if _, code := run("tool", "sandbox_click", `{"x": -1, "y": 0}`); code != 1 {
		t.Errorf("tool with a bad argument: code %d, want 1", code)
	}
	checkToolYieldsAndRecords(t, cli)
	if out, code := run("tool"); code != 0 || strings.Count(out, "sandbox_") < 16 {
		t.Errorf("tool list: %d %s", code, out)
	}
	if out, code := run("stop"); code != 0 || !strings.Contains(out, "stopped") {
		t.Errorf("stop: %d %s", code, out)
	}
	if out, code := run("remove"); code != 0 || !strings.Contains(out, "Removed") {
		t.Errorf("remove: %d %s", code, out)
	}
	if out, code := run("status"); code != 0 || !strings.Contains(out, "No sandbox") {
		t.Errorf("status after remove: %d %s", code, out)
	}
	if _, code := run("exec", "--", "true"); code != 1 {
		t.Errorf("exec without a sandbox: code %d, want 1", code)
	}
	if _, code := run("bogus"); code != 2 {
		t.Errorf("unknown command: code %d, want 2", code)
	}
}

// checkToolYieldsAndRecords: `pilot-sandbox tool` yields to the user
// holding the desktop as the other tool sets do (an agent outside may run
// it from its shell), and its calls are on the sandbox's timeline, named.
func checkToolYieldsAndRecords(t *testing.T, cli projectCLI) {
	t.Helper()
	state := filepath.Join(cli.state, "pilot-sandbox")
	project, err := projectfs.Canonical(cli.project)
	if err != nil {
		t.Fatal(err)
	}
	control := activity.NewControl(state)
	if err := control.Take(project); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := cli.run(nil, "tool", "sandbox_click", `{"x": 5, "y": 5}`)
	control.Release(project)
	if code != 1 || !strings.Contains(errOut, "user") {
		t.Errorf("tool sandbox_click while the user holds the desktop: code %d, %q", code, errOut)
	}
	if out, errOut, code := cli.run(nil, "tool", "sandbox_click", `{"x": 5, "y": 5}`); code != 0 {
		t.Errorf("tool sandbox_click once given back: code %d, %s %s", code, out, errOut)
	}
	entries, err := activity.NewLog(state).Read(project, 0, 100)
	var clicks []string
	for _, e := range entries {
		if e.Name == "sandbox_click" && e.Client == "pilot-sandbox tool" && e.Source == activity.SourceRPC {
			clicks = append(clicks, fmt.Sprintf("isError %v, after %v", e.IsError, len(e.After) > 0))
		}
	}
	if err != nil || strings.Join(clicks, "; ") != "isError true, after false; isError false, after true" {
		t.Errorf("the timeline's clicks of pilot-sandbox tool: %q, %v", clicks, err)
	}
}
