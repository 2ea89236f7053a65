package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestSidecarKilledMidStart kills a sidecar with SIGKILL while it starts a
// sandbox, at two points (the container being created; the container made
// and its desktop starting), then starts another sidecar: it finds what
// the first left, finishes the start on the same container, and the state
// file says what Docker says. Nothing is left over or made twice.
func TestSidecarKilledMidStart(t *testing.T) {
	docker := dockertest.Engine(t)
	for _, stage := range []string{service.StageCreate, service.StageStart} {
		t.Run(stage, func(t *testing.T) {
			project := dockertest.Project(t, docker)
			stateHome := "XDG_STATE_HOME=" + t.TempDir()
			first := startSidecar(t, "ndjson", stateHome)
			result(t, first.call("initialize", map[string]any{}, 20*time.Second))
			first.write(map[string]any{"id": 99, "method": "sandbox/start", "params": map[string]any{"projectPath": project}})
			first.waitNotification("sandbox/progress", func(p map[string]any) bool { return p["stage"] == stage }, 5*time.Minute)
			first.cmd.Process.Kill()
			first.cmd.Wait()
			if data, err := os.ReadFile(filepath.Join(project, ".pilot", "sandbox.json")); err == nil && !json.Valid(data) {
				t.Errorf("the kill left a partial state file: %q", data)
			}

			second := startSidecar(t, "ndjson", stateHome)
			result(t, second.call("initialize", map[string]any{}, 20*time.Second))
			left := second.call("sandbox/status", map[string]any{"projectPath": project}, time.Minute)["result"]
			t.Logf("killed at %q; the next sidecar finds %v", stage, left)
			st := result(t, second.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
			if st["status"] != "running" {
				t.Fatalf("start after the kill: %v", st)
			}
			if left, ok := left.(map[string]any); stage == service.StageStart && (!ok || left["containerId"] != st["containerId"]) {
				t.Errorf("the container the killed sidecar made (%v) is not the one started", left)
			}
			assertOneContainer(t, docker, project, st["containerId"].(string))
			assertStateFile(t, project, st)
			assertViewer(t, st["viewerUrl"].(string))
			if entries, _ := os.ReadDir(filepath.Join(project, ".pilot")); len(entries) != 2 {
				t.Errorf(".pilot holds %v, want sandbox.json and .gitignore alone", entries)
			}
		})
	}
}

// TestTwoSidecarsAndTheCommandLineShareASandbox starts one project's
// sandbox from two sidecars and `pilot-sandbox start` at once, as a user
// with two windows of the app and a terminal might: one container, and
// every address handed out works (no process put its passwords over
// another's). A restart by one sidecar is seen by the other with the new
// passwords.
func TestTwoSidecarsAndTheCommandLineShareASandbox(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	stateDir := t.TempDir()
	stateHome := "XDG_STATE_HOME=" + stateDir
	a, b := startSidecar(t, "lsp", stateHome), startSidecar(t, "ndjson", stateHome)
	for _, s := range []*sidecar{a, b} {
		result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	}
	var wg sync.WaitGroup
	replies := make([]map[string]any, 2)
	for i, s := range []*sidecar{a, b} {
		wg.Go(func() { replies[i] = s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute) })
	}
	var cli bytes.Buffer
	wg.Go(func() {
		cmd := exec.Command(binary, "start", "--json", "--project", project)
		cmd.Env = append(os.Environ(), stateHome)
		cmd.Stdout = &cli
		if err := cmd.Run(); err != nil {
			t.Errorf("pilot-sandbox start: %v", err)
		}
	})
	wg.Wait()
	states := []map[string]any{result(t, replies[0]), result(t, replies[1])}
	var fromCLI map[string]any
	if err := json.Unmarshal(cli.Bytes(), &fromCLI); err != nil {
		t.Fatalf("pilot-sandbox start --json: %v: %s", err, cli.String())
	}
	id := states[0]["containerId"].(string)
	for _, st := range append(states, fromCLI) {
		if st["containerId"] != id || st["status"] != "running" {
			t.Errorf("a start answered %v", st)
		}
		assertViewer(t, st["viewerUrl"].(string))
		assertViewer(t, st["watchUrl"].(string))
	}
	assertOneContainer(t, docker, project, id)

	result(t, a.call("sandbox/stop", map[string]any{"projectPath": project}, time.Minute))
	restarted := result(t, a.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	// The other sidecar learns of the stop and the new run from Docker's
	// events, each in its turn: until it has handled the start and its own
	// probe of the desktop answered, it may still say stopping, stopped or
	// starting (a status while it handles an event answers its last state).
	var seen map[string]any
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		seen = result(t, b.call("sandbox/status", map[string]any{"projectPath": project}, time.Minute))
		if seen["status"] == "running" || time.Now().After(deadline) {
			break
		}
	}
	if seen["viewerUrl"] != restarted["viewerUrl"] || seen["viewerUrl"] == states[1]["viewerUrl"] {
		t.Errorf("after a restart by the other sidecar: %v %v, want running at %v", seen["status"], seen["viewerUrl"], restarted["viewerUrl"])
	}
	assertViewer(t, seen["viewerUrl"].(string))
	assertStateFile(t, project, restarted)
}

// assertOneContainer checks that the project has exactly one container,
// with this ID.
func assertOneContainer(t *testing.T, docker service.Docker, project, id string) {
	t.Helper()
	all, err := docker.ListContainers(context.Background(), map[string]string{service.LabelProject: project})
	if err != nil || len(all) != 1 || all[0].ID != id {
		var ids []string
		for _, c := range all {
			ids = append(ids, c.ID[:12])
		}
		t.Errorf("the project's containers: %v (%v), want %s alone", ids, err, id[:12])
	}
}

// assertStateFile checks that .pilot/sandbox.json says what the state says.
func assertStateFile(t *testing.T, project string, st map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(project, ".pilot", "sandbox.json"))
	var rec map[string]any
	if err != nil || json.Unmarshal(data, &rec) != nil {
		t.Fatalf("sandbox.json: %v: %q", err, data)
	}
	for _, k := range []string{"containerId", "wsPort", "vncPort", "status"} {
		if rec[k] != st[k] {
			t.Errorf("sandbox.json %s = %v, the state says %v", k, rec[k], st[k])
		}
	}
}

// assertViewer connects to a sandbox's desktop the way the address's noVNC
// page would: its password must work.
func assertViewer(t *testing.T, url string) {
	t.Helper()
	c, err := rfbtest.DialViewer(url, 10*time.Second)
	if err != nil {
		t.Errorf("%s: %v", strings.SplitN(url, "password=", 2)[0], err)
		return
	}
	c.Close()
}
