package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// taskProject makes a git project with one file.
func taskProject(t *testing.T) string {
	t.Helper()
	project := dockertest.Project(t, dockertest.Engine(t))
	if err := os.WriteFile(filepath.Join(project, "main.py"), []byte("print('hi')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "1"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = project
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return project
}

// TestServeTasks: the tasks through the protocol on a real sandbox: a
// sync's progress, a task's events to the client, its diff, apply refused
// over a host edit (conflict naming the file), then done.
func TestServeTasks(t *testing.T) {
	project := taskProject(t)
	s := startSidecar(t, "ndjson", ownScope(t))
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	synced := result(t, s.call("sandbox/workspace/sync", map[string]any{"projectPath": project}, time.Minute))
	if synced["files"] != 1.0 || synced["changed"] != true || len(s.notifications("sandbox/progress")) == 0 {
		t.Fatalf("sync: %v, progress %v", synced, s.notifications("sandbox/progress"))
	}
	started := result(t, s.call("sandbox/tasks/start", map[string]any{
		"projectPath": project, "agent": "command",
		"command": []string{"sh", "-c", "echo working; echo \"print('bye')\" >> main.py"},
	}, time.Minute))
	id := started["taskId"].(string)
	fin := s.waitNotification("sandbox/task", func(p map[string]any) bool {
		return p["taskId"] == id && p["event"].(map[string]any)["type"] == "finished"
	}, time.Minute)
	if ev := fin["event"].(map[string]any); ev["status"] != "succeeded" || ev["commit"] == "" {
		t.Fatalf("finished: %v", ev)
	}
	diff := result(t, s.call("sandbox/tasks/diff", map[string]any{"taskId": id}, time.Minute))
	if !strings.Contains(diff["patch"].(string), "+print('bye')") {
		t.Errorf("diff: %v", diff)
	}
	os.WriteFile(filepath.Join(project, "main.py"), []byte("print('the user')\n"), 0o644)
	refused := s.call("sandbox/tasks/apply", map[string]any{"taskId": id}, time.Minute)
	e, _ := refused["error"].(map[string]any)
	if e == nil || e["code"] != -32012.0 || !strings.Contains(jsonString(e["data"]), `"paths":["main.py"]`) {
		t.Fatalf("apply over a host edit: %v", refused)
	}
	os.WriteFile(filepath.Join(project, "main.py"), []byte("print('hi')\n"), 0o644)
	applied := result(t, s.call("sandbox/tasks/apply", map[string]any{"taskId": id}, time.Minute))
	data, _ := os.ReadFile(filepath.Join(project, "main.py"))
	if string(data) != "print('hi')\nprint('bye')\n" {
		t.Errorf("applied %v; main.py reads %q", applied, data)
	}
	if missing := s.call("sandbox/tasks/get", map[string]any{"taskId": "20990101-000000-00000000"}, time.Minute); missing["error"].(map[string]any)["code"] != -32013.0 {
		t.Errorf("a task that is not: %v", missing)
	}
}

// TestCommandLineTask: sync, task run (its transcript and exit status),
// list, diff and apply from a terminal's point of view.
func TestCommandLineTask(t *testing.T) {
	project := taskProject(t)
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), ownScope(t)}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return cliRun(t, env, "", args...)
	}
	if out, errOut, code := run("start", "--project", project); code != 0 {
		t.Fatalf("start: %d %s %s", code, out, errOut)
	}
	if out, _, code := run("sync", "--project", project); code != 0 || !strings.Contains(out, "Synced 1 files") {
		t.Errorf("sync: %d %q", code, out)
	}
	out, errOut, code := run("task", "run", "--project", project, "--", "sh", "-c", "echo to-stdout; echo to-stderr >&2; echo new > added.txt; exit 3")
	if code != 3 || out != "to-stdout\n" || !strings.Contains(errOut, "to-stderr") || !strings.Contains(errOut, "failed (exit 3)") {
		t.Errorf("task run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, _, code := run("task", "run", "--project", project, "--no-sync", "--timeout", "1s", "--", "sleep", "60"); code != 124 {
		t.Errorf("a task that times out exits %d", code)
	}
	out, _, _ = run("task", "list", "--project", project)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "timed_out") || !strings.Contains(lines[1], "failed") {
		t.Fatalf("task list:\n%s", out)
	}
	id := strings.Fields(lines[1])[0]
	if out, _, code := run("task", "diff", id, "--project", project); code != 0 || !strings.Contains(out, "added.txt") {
		t.Errorf("task diff: %d\n%s", code, out)
	}
	if out, errOut, code := run("task", "apply", id, "--project", project); code != 0 || !strings.Contains(out, "Applied 1 files") {
		t.Errorf("task apply: %d %q %q", code, out, errOut)
	}
	if data, _ := os.ReadFile(filepath.Join(project, "added.txt")); string(data) != "new\n" {
		t.Errorf("added.txt reads %q", data)
	}
}

// taskFinished waits for the task's finished notification and returns it
// with the task's events, one JSON text each, in order.
func taskFinished(t *testing.T, s *sidecar, id string, within time.Duration) (map[string]any, string) {
	t.Helper()
	fin := s.waitNotification("sandbox/task", func(p map[string]any) bool {
		return p["taskId"] == id && p["event"].(map[string]any)["type"] == "finished"
	}, within)
	var seen []string
	for _, n := range s.notifications("sandbox/task") {
		if n["taskId"] == id {
			seen = append(seen, jsonString(n["event"]))
		}
	}
	return fin, strings.Join(seen, "\n")
}

func jsonString(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// TestServeReattachesATaskAfterARestart: the sidecar that started a task
// is killed; the next one finds the task in the user's state, follows it
// to its end and sends the events the first had not sent.
func TestServeReattachesATaskAfterARestart(t *testing.T) {
	project := taskProject(t)
	state := "XDG_STATE_HOME=" + t.TempDir()
	first := startSidecar(t, "ndjson", ownScope(t), state)
	result(t, first.call("initialize", map[string]any{}, 20*time.Second))
	result(t, first.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	started := result(t, first.call("sandbox/tasks/start", map[string]any{
		"projectPath": project, "agent": "command", "command": []string{"sh", "-c", "echo before; sleep 4; echo after"},
	}, time.Minute))
	id := started["taskId"].(string)
	first.waitNotification("sandbox/task", func(p map[string]any) bool {
		return p["taskId"] == id && p["event"].(map[string]any)["text"] == "before"
	}, time.Minute)
	first.cmd.Process.Kill()
	first.cmd.Wait()

	next := startSidecar(t, "ndjson", ownScope(t), state)
	result(t, next.call("initialize", map[string]any{}, 20*time.Second))
	after := next.waitNotification("sandbox/task", func(p map[string]any) bool {
		return p["taskId"] == id && p["event"].(map[string]any)["text"] == "after"
	}, time.Minute)
	fin := next.waitNotification("sandbox/task", func(p map[string]any) bool {
		return p["taskId"] == id && p["event"].(map[string]any)["type"] == "finished"
	}, time.Minute)
	if fin["event"].(map[string]any)["status"] != "succeeded" || after["seq"].(float64) >= fin["seq"].(float64) {
		t.Errorf("after the restart: %v then %v", after, fin)
	}
	got := result(t, next.call("sandbox/tasks/get", map[string]any{"taskId": id}, time.Minute))
	if events := got["events"].([]any); len(events) != 4 {
		t.Errorf("the task's events after the restart: %v", events)
	}
}
