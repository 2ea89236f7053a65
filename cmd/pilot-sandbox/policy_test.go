package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// cliRun runs the binary with env added to the tests' environment and
// stdin as its standard input.
func cliRun(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Run()
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

func TestCommandLineRemovesOrphans(t *testing.T) {
	docker := dockertest.Engine(t)
	// A scope of its own: prune removes every orphan it sees, and the
	// sandboxes of tests running beside it (other packages) must not be
	// among them.
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), ownScope(t)}
	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return cliRun(t, env, stdin, args...)
	}
	pruned, byPath, byID := dockertest.Project(t, docker), dockertest.Project(t, docker), dockertest.Project(t, docker)
	for _, p := range []string{pruned, byPath, byID} {
		if out, errOut, code := run("", "start", "--project", p); code != 0 {
			t.Fatalf("start %s: %d %s %s", p, code, out, errOut)
		}
	}
	os.RemoveAll(pruned)
	os.RemoveAll(byPath)

	out, _, code := run("", "list")
	if code != 0 || !strings.HasSuffix(lineOf(out, pruned), "(project directory gone)") ||
		!strings.HasSuffix(lineOf(out, byPath), "(project directory gone)") || strings.Contains(lineOf(out, byID), "gone") ||
		!strings.Contains(out, "pilot-sandbox prune removes them") {
		t.Errorf("list:\n%s", out)
	}
	out, _, _ = run("", "list", "--json")
	var listed []map[string]any
	json.Unmarshal([]byte(out), &listed)
	gone := map[string]bool{}
	for _, st := range listed {
		gone[st["projectPath"].(string)] = st["projectGone"] == true
	}
	if !gone[pruned] || !gone[byPath] || gone[byID] {
		t.Errorf("list --json marks %v", gone)
	}

	if out, errOut, code := run("", "remove", "--project", byPath); code != 0 || !strings.Contains(out, "Removed the sandbox of "+byPath) {
		t.Errorf("remove of a deleted project: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := run("y\n", "prune"); code != 1 || !strings.Contains(errOut, "pilot-sandbox prune --yes") {
		t.Errorf("prune without a terminal: %d %s", code, errOut)
	}
	if out, errOut, code := run("", "prune", "--yes"); code != 0 || !strings.Contains(out, "Removed the sandbox of "+pruned) || strings.Contains(out, byID) {
		t.Errorf("prune --yes: %d %s %s", code, out, errOut)
	}
	if out, _, code := run("", "prune", "--yes"); code != 0 || !strings.Contains(out, "No sandbox belongs") {
		t.Errorf("prune again: %d %s", code, out)
	}

	status, _, _ := run("", "status", "--project", byID, "--json")
	var st map[string]any
	json.Unmarshal([]byte(status), &st)
	id, _ := st["containerId"].(string)
	if out, errOut, code := run("", "remove", "--container", id); id == "" || code != 0 || !strings.Contains(out, "Removed") {
		t.Errorf("remove --container %q: %d %s %s", id, code, out, errOut)
	}
	// Gone: a failure, as docker rm of a missing container (issue 26).
	if out, errOut, code := run("", "remove", "--container", id); code == 0 || !strings.Contains(errOut, "no sandbox container") {
		t.Errorf("remove --container again: %d %s %s; want a failure", code, out, errOut)
	}
	if out, _, _ := run("", "list"); strings.Contains(out, pruned) || strings.Contains(out, byPath) || strings.Contains(out, byID) {
		t.Errorf("list after removing them all:\n%s", out)
	}
}

func lineOf(text, part string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, part) {
			return l
		}
	}
	return ""
}

func TestDoctorShowsThePolicy(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, config string // "" writes no file
		fails        bool
		want         []string
	}{
		{name: "no file", want: []string{"ok   the lifecycle policy is the default (", "does not exist): idleStop 30m, maxRunning 4, maxTasks 1, disk 10GiB, caps: memory 4GiB, cpus 2, processes 4096, shmSize 2GiB"}},
		{name: "a file", config: `{"idleStop": "1h", "maxRunning": 2, "disk": "0"}`,
			want: []string{"ok   the lifecycle policy from ", "config.json: idleStop 1h, maxRunning 2, maxTasks 1, disk 0 (no limit)"}},
		{name: "a bad file", config: `{"idleStop": "5s", "maxRunning": 2, "cpus": 4}`, fails: true, want: []string{
			"FAIL the lifecycle policy in ", "     cpus is not a known key", `     idleStop must be at least 1m, or "0" for never; it is "5s"`,
			"no sandbox is\n     stopped for idleness or disk use. Read as: idleStop 30m, maxRunning 2,"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			os.MkdirAll(home, 0o700)
			if tc.config != "" {
				home = writeConfig(dir, filepath.Base(home), tc.config)
			}
			out, _, code := cliRun(t, []string{"XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + t.TempDir()}, "", "doctor")
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("doctor does not say %q:\n%s", w, out)
				}
			}
			if tc.fails && code != 1 {
				t.Errorf("doctor exited %d with a bad config.json, want 1", code)
			}
		})
	}
}

func TestConfirmTakesOnlyYes(t *testing.T) {
	for answer, want := range map[string]bool{"y\n": true, "Y\n": true, " yes \n": true, "yes": true, "n\n": false, "\n": false, "": false, "yess\n": false, "no\n": false} {
		var out bytes.Buffer
		if got := confirm(strings.NewReader(answer), &out, "Remove? [y/N] "); got != want || out.String() != "Remove? [y/N] " {
			t.Errorf("answer %q: %v (asked %q), want %v", answer, got, out.String(), want)
		}
	}
}

// TestStatusRightAfterInitializeKnowsTheRunningSandbox: a client that asks
// while the sidecar's first look at Docker is under way gets the sandbox
// that runs, not null. Measured before the fix: a status sent 30 to 300 ms
// after initialize answered null (the look held the project), one sent at
// once or later did not; so statuses go out every 20 ms over the first
// half second, and every one must say running.
func TestStatusRightAfterInitializeKnowsTheRunningSandbox(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	if out, errOut, code := cliRun(t, []string{"XDG_STATE_HOME=" + t.TempDir()}, "", "start", "--project", project); code != 0 {
		t.Fatalf("start: %d %s %s", code, out, errOut)
	}
	for _, framing := range []string{"ndjson", "lsp"} {
		t.Run(framing, func(t *testing.T) {
			s := startSidecar(t, framing)
			s.write(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{}})
			const asks = 25
			for id := 1; id <= asks; id++ {
				s.write(map[string]any{"id": id, "method": "sandbox/status", "params": map[string]any{"projectPath": project}})
				time.Sleep(20 * time.Millisecond) // spread over the startup, not a wait for anything
			}
			deadline := time.After(time.Minute)
			for answered := 0; answered <= asks; {
				var msg map[string]any
				select {
				case msg = <-s.msgs:
				case <-deadline:
					t.Fatalf("%d of %d requests answered within a minute", answered, asks+1)
				}
				id, isReply := msg["id"].(float64)
				if !isReply {
					continue // a notification
				}
				if answered++; id == 0 {
					continue // initialize
				}
				if st, _ := msg["result"].(map[string]any); st == nil || st["status"] != "running" {
					t.Errorf("status %v sent %d ms after initialize: %v, want running", id, int(id-1)*20, msg["result"])
				}
			}
		})
	}
}

func TestServeRefusesAStartPastMaxRunning(t *testing.T) {
	docker := dockertest.Engine(t)
	first, second := dockertest.Project(t, docker), dockertest.Project(t, docker)
	config := writeConfig(t.TempDir(), "max-one", `{"maxRunning": 1}`)
	// A scope of its own: maxRunning counts every running sandbox of one.
	s := startSidecar(t, "ndjson", "XDG_CONFIG_HOME="+config, "PILOT_SCOPE="+dockertest.TestScope+"-maxrunning")
	result(t, s.call("initialize", map[string]any{}, 10*time.Second))
	started := result(t, s.call("sandbox/start", map[string]any{"projectPath": first}, 5*time.Minute))
	msg := s.call("sandbox/start", map[string]any{"projectPath": second}, time.Minute)
	e, _ := msg["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	running, _ := data["running"].([]any)
	if e == nil || e["code"] != -32008.0 || data["kind"] != "too_many_sandboxes" || len(running) != 1 {
		t.Fatalf("second start: %v", msg)
	}
	if r := running[0].(map[string]any); r["projectPath"] != first || r["containerId"] != started["containerId"] {
		t.Errorf("data.running = %v, want %s", running, first)
	}
}

// TestADeathIsOnTheTimelineOnce: two sidecars of the user's serve a
// project (the app's and an MCP server, the usual case); its container is
// killed from outside, which both see: the timeline has the death, with
// its reason, once. (A policy's stop takes the same path, stopReason for
// error: the shortest idleStop a config.json may give is a minute.)
func TestADeathIsOnTheTimelineOnce(t *testing.T) {
	project := dockertest.Project(t, dockertest.Engine(t))
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), ownScope(t)}
	first, second := startSidecar(t, "ndjson", env...), startSidecar(t, "ndjson", env...)
	for _, s := range []*sidecar{first, second} {
		result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	}
	st := result(t, first.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	if out, err := exec.Command("docker", "kill", st["containerId"].(string)).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	for _, s := range []*sidecar{first, second} {
		s.waitNotification("sandbox/event", func(p map[string]any) bool {
			st, _ := p["state"].(map[string]any)
			return p["projectPath"] == project && st != nil && st["status"] == "error"
		}, 2*time.Minute)
	}
	got := result(t, second.call("sandbox/activity", map[string]any{"projectPath": project, "brief": true}, time.Minute))
	var deaths []string
	for _, e := range got["entries"].([]any) {
		if e := e.(map[string]any); e["kind"] == "lifecycle" && e["name"] == "error" {
			deaths = append(deaths, fmt.Sprintf("%s %s %v: %s", e["source"], e["client"], e["isError"], e["summary"]))
		}
	}
	if strings.Join(deaths, "\n") != "rpc pilot-sandbox true: the sandbox was killed from outside (exit code 137)" {
		t.Errorf("the timeline's deaths: %q", deaths)
	}
}
