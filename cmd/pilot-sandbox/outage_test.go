package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestServeSurvivesDockerGoingAway takes the engine away from a running
// sidecar (through a proxy, so the shared engine keeps running) and gives
// it back: meanwhile initialize and docker/status say what is wrong and
// what to do, every sandbox method answers docker_unavailable, and
// afterwards everything works again, events included, without a restart.
func TestServeSurvivesDockerGoingAway(t *testing.T) {
	proxy := dockertest.NewProxy(t)
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	s := startSidecar(t, "lsp", "DOCKER_HOST="+proxy.Host())
	if st := result(t, s.call("initialize", map[string]any{}, 20*time.Second))["docker"].(map[string]any); st["available"] != true {
		t.Fatalf("docker status before the cut: %v", st)
	}
	st := result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))

	proxy.Cut()
	for _, method := range []string{"initialize", "docker/status"} {
		started := time.Now()
		r := result(t, s.call(method, map[string]any{}, time.Minute))
		t.Logf("%s without Docker answered in %s", method, time.Since(started).Round(time.Millisecond))
		if method == "initialize" {
			r = r["docker"].(map[string]any)
		}
		msg, _ := r["error"].(string)
		if r["available"] != false || !strings.Contains(msg, "Docker is not running") || !strings.Contains(msg, "start Docker Desktop or dockerd") {
			t.Errorf("%s without Docker: %v", method, r)
		}
	}
	p := map[string]any{"projectPath": project}
	for _, c := range []struct {
		method string
		params map[string]any
	}{
		{"sandbox/status", p},
		{"sandbox/exec", map[string]any{"projectPath": project, "command": "true"}},
		{"sandbox/screenshot", p},
		{"sandbox/start", p},
		{"sandbox/stop", p},
		{"project/close", p},
		{"sandbox/list", map[string]any{}},
		{"sandbox/remove", p},
	} {
		started := time.Now()
		msg := s.call(c.method, c.params, time.Minute)
		t.Logf("%s without Docker answered in %s", c.method, time.Since(started).Round(time.Millisecond))
		if kind := errorKind(msg); kind != "docker_unavailable" {
			t.Errorf("%s without Docker: %v", c.method, msg)
		}
	}

	proxy.Restore()
	if r := result(t, s.call("docker/status", map[string]any{}, 20*time.Second)); r["available"] != true {
		t.Errorf("docker/status after the engine came back: %v", r)
	}
	if r := result(t, s.call("sandbox/status", p, time.Minute)); r["status"] != "running" || r["containerId"] != st["containerId"] {
		t.Errorf("status after the engine came back: %v", r)
	}
	if r := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "echo back"}, time.Minute)); r["stdout"] != "back\n" {
		t.Errorf("exec after the engine came back: %v", r)
	}
	// Events too: the sidecar follows Docker's event stream again, so a
	// stop made outside it is announced.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := docker.StopContainer(ctx, st["containerId"].(string), time.Second); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	ev := s.waitNotification("sandbox/event", func(p map[string]any) bool {
		state, _ := p["state"].(map[string]any)
		return p["projectPath"] == project && state != nil &&
			(state["status"] == string(service.StatusStopped) || state["status"] == string(service.StatusError))
	}, time.Minute)
	t.Logf("a stop outside the sidecar was announced after %s: %v", time.Since(started).Round(time.Millisecond), ev["state"].(map[string]any)["status"])

	result(t, s.call("shutdown", nil, 10*time.Second))
	s.write(map[string]any{"method": "exit"})
	if code := s.wait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestDockerRestartedUnderTheSidecar takes the engine away from a sidecar
// with a running sandbox, stops the sandbox meanwhile (as an engine that
// restarts stops its containers), and gives the engine back. While it is
// away, docker/status says so, a start fails at once with -32001 and an
// agent tool says Docker is not available; a start that failed leaves
// nothing behind. Once it is back, the sidecar notices the stopped sandbox
// by itself within seconds, and everything works again without a restart
// of the sidecar: the sandbox starts on new ports with new passwords, the
// agent tools drive it, a new project gets its sandbox.
func TestDockerRestartedUnderTheSidecar(t *testing.T) {
	proxy := dockertest.NewProxy(t)
	docker := dockertest.Engine(t)
	project, other := dockertest.Project(t, docker), dockertest.Project(t, docker)
	s := startSidecar(t, "ndjson", "DOCKER_HOST="+proxy.Host())
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	p := map[string]any{"projectPath": project}
	result(t, s.call("sandbox/setToolsEnabled", map[string]any{"projectPath": project, "enabled": true}, 10*time.Second))
	before := result(t, s.call("sandbox/start", p, 5*time.Minute))
	screenshot := map[string]any{"projectPath": project, "name": "sandbox_screenshot", "arguments": map[string]any{}}
	if r := result(t, s.call("tools/call", screenshot, time.Minute)); r["isError"] != false {
		t.Fatalf("screenshot before: %v", r)
	}

	proxy.Cut()
	if r := result(t, s.call("docker/status", map[string]any{}, 20*time.Second)); r["available"] != false {
		t.Errorf("docker/status with the engine away: %v", r)
	}
	if kind := errorKind(s.call("sandbox/start", map[string]any{"projectPath": other}, time.Minute)); kind != "docker_unavailable" {
		t.Errorf("start with the engine away: %s", kind)
	}
	if r := result(t, s.call("tools/call", screenshot, time.Minute)); r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "Docker is not available") {
		t.Errorf("a tool with the engine away: %v", r)
	}
	ctx := context.Background()
	if err := docker.StopContainer(ctx, before["containerId"].(string), 5*time.Second); err != nil {
		t.Fatal(err)
	}

	proxy.Restore()
	back := time.Now()
	s.waitNotification("sandbox/event", func(n map[string]any) bool {
		state, _ := n["state"].(map[string]any)
		return n["projectPath"] == project && state != nil && state["status"] == "stopped"
	}, time.Minute)
	t.Logf("the sandbox stopped meanwhile was announced %s after the engine came back, unasked", time.Since(back).Round(time.Millisecond))
	if r := result(t, s.call("docker/status", map[string]any{}, 20*time.Second)); r["available"] != true {
		t.Errorf("docker/status with the engine back: %v", r)
	}
	if r := s.call("sandbox/status", map[string]any{"projectPath": other}, time.Minute); r["result"] != nil || r["error"] != nil {
		t.Errorf("the start that failed left %v", r)
	}
	if _, err := os.Stat(filepath.Join(other, ".pilot", "sandbox.json")); !os.IsNotExist(err) {
		t.Errorf("the start that failed left a state file: %v", err)
	}
	after := result(t, s.call("sandbox/start", p, 5*time.Minute))
	if after["containerId"] != before["containerId"] || after["status"] != "running" || after["viewerUrl"] == before["viewerUrl"] {
		t.Errorf("start with the engine back: %v", after)
	}
	assertViewer(t, after["viewerUrl"].(string))
	if r := result(t, s.call("tools/call", screenshot, time.Minute)); r["isError"] != false {
		t.Errorf("screenshot after: %v", r)
	}
	if r := result(t, s.call("sandbox/start", map[string]any{"projectPath": other}, 5*time.Minute)); r["status"] != "running" {
		t.Errorf("a new project with the engine back: %v", r)
	}
}
