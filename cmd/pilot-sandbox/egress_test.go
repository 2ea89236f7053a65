package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestServeEnforcesTheNetworkPolicy: `pilot-sandbox serve` with a locked
// policy in the user's config.json: a command in the sandbox that asks a
// host through the proxy it is given gets the 403 with the policy's
// reason; one that ignores the proxy is refused all the same; the next
// sandbox_exec result names what was blocked; the connection log has it.
func TestServeEnforcesTheNetworkPolicy(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	config := writeConfig(t.TempDir(), "locked", `{"idleStop": "0", "maxRunning": 0, "disk": "0", "network": {"preset": "locked"}}`)
	s := startSidecar(t, "ndjson", "XDG_CONFIG_HOME="+config)
	result(t, s.call("initialize", map[string]any{}, 10*time.Second))
	if st := result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute)); st["status"] != "running" {
		t.Fatalf("start: %v", st)
	}
	out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": `python3 -c '
import socket, urllib.request, urllib.error
try:
    urllib.request.urlopen("http://example.test/", timeout=20)
except urllib.error.HTTPError as e:
    print("proxy:", e.code, e.read().decode().strip())
try:
    c = socket.create_connection(("192.0.2.10", 80), timeout=10)
    c.sendall(b"GET / HTTP/1.0\r\nHost: raw.test\r\n\r\n")
    print("raw:", c.recv(200).decode().splitlines()[0])
except OSError as e:
    print("raw failed:", e)
'`}, time.Minute))
	stdout, _ := out["stdout"].(string)
	if !strings.Contains(stdout, "proxy: 403 ") || !strings.Contains(stdout, "example.test") || !strings.Contains(stdout, "raw: HTTP/1.1 403 ") {
		t.Errorf("the sandbox's connections: %v", out)
	}
	result(t, s.call("sandbox/setToolsEnabled", map[string]any{"projectPath": project, "enabled": true}, 10*time.Second))
	call := result(t, s.call("tools/call", map[string]any{"projectPath": project, "name": "sandbox_exec", "arguments": map[string]any{"command": "true"}}, time.Minute))
	text := call["content"].([]any)[0].(map[string]any)["text"].(string)
	if !strings.Contains(text, "Network: pilot-sandbox blocked example.test:80") {
		t.Errorf("sandbox_exec's result does not say what was blocked: %q", text)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		log := result(t, s.call("sandbox/network/log", map[string]any{"projectPath": project}, 10*time.Second))
		entries, _ := log["entries"].([]any)
		var hosts []string
		for _, e := range entries {
			if m := e.(map[string]any); m["decision"] == "deny" {
				hosts = append(hosts, m["host"].(string))
			}
		}
		if strings.Contains(strings.Join(hosts, " "), "example.test") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the connection log: %v", log)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
