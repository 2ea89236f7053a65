package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestServeExecStreamedAndInTheBackground proves issue 11's exec through
// the protocol, on a real sandbox: output streamed as notifications before
// the answer, stdin and env, an answer that does not wait for a background
// child, and background processes listed (by this sidecar and another)
// and killed with their children; and a host port forwarded into it.
func TestServeExecStreamedAndInTheBackground(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	s := startSidecar(t, "lsp")
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	exec := func(t *testing.T, params map[string]any) map[string]any {
		t.Helper()
		params["projectPath"] = project
		return result(t, s.call("sandbox/exec", params, 2*time.Minute))
	}

	t.Run("output notifications arrive in order before the result", func(t *testing.T) {
		s.pending = nil
		out := exec(t, map[string]any{"outputToken": "tok-1", "command": `echo first; sleep 0.2; echo second >&2; sleep 0.2; ` +
			`for i in $(seq 1 3000); do echo "line $i"; echo "err $i" >&2; done; printf 'caf\303'; printf '\251!'`})
		streamed := streamedOutput(t, s.notifications("sandbox/output"), project, "tok-1")
		if streamed["stdout"] != out["stdout"] || streamed["stderr"] != out["stderr"] || !strings.HasSuffix(out["stdout"].(string), "café!") {
			t.Errorf("streamed stdout %d bytes, stderr %d; the result's %d and %d; stdout ends %q",
				len(streamed["stdout"]), len(streamed["stderr"]), len(out["stdout"].(string)), len(out["stderr"].(string)), tail(out["stdout"].(string)))
		}
		if order := streamOrder(s.notifications("sandbox/output")); !strings.HasPrefix(order, "stdout stderr stdout") {
			t.Errorf("the streams came in the order %.60s, want stdout, stderr, then stdout", order)
		}
	})
	t.Run("an integer token, and no notifications without one", func(t *testing.T) {
		s.pending = nil
		exec(t, map[string]any{"outputToken": 7, "command": "echo seven"})
		exec(t, map[string]any{"command": "echo none"})
		got := s.notifications("sandbox/output")
		if len(got) != 1 || got[0]["token"] != 7.0 || got[0]["data"] != "seven\n" {
			t.Errorf("notifications: %v", got)
		}
	})
	t.Run("a forwarded port reaches the host's server", func(t *testing.T) {
		host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host page") }))
		defer host.Close()
		hostPort := host.Listener.Addr().(*net.TCPAddr).Port
		fetch := `python3 -c 'import urllib.request; print(urllib.request.urlopen("http://localhost:8766/", timeout=10).read().decode(), end="")'`
		result(t, s.call("sandbox/ports/forward", map[string]any{"projectPath": project, "port": 8766, "hostPort": hostPort}, time.Minute))
		if out := exec(t, map[string]any{"command": fetch}); out["stdout"] != "host page" {
			t.Errorf("through the forward: %v", out)
		}
		list := result(t, s.call("sandbox/ports/list", map[string]any{"projectPath": project}, time.Minute))
		if fmt.Sprint(list["forwarded"]) != fmt.Sprintf("[map[hostPort:%d port:8766]]", hostPort) {
			t.Errorf("forwarded: %v", list["forwarded"])
		}
		closed := result(t, s.call("sandbox/ports/close", map[string]any{"projectPath": project, "port": 8766, "direction": "forwarded"}, time.Minute))
		if out := exec(t, map[string]any{"command": fetch}); closed["closed"] != true || out["exitCode"] == 0.0 {
			t.Errorf("after close (%v): %v", closed, out)
		}
	})
	t.Run("stdin and env arrive", func(t *testing.T) {
		out := exec(t, map[string]any{"command": `cat; echo "[$GREETING] [$OTHER]"`, "stdin": "hello\nworld ",
			"env": map[string]any{"GREETING": "hi there", "OTHER": "a=b 'c'"}})
		if out["stdout"] != "hello\nworld [hi there] [a=b 'c']\n" {
			t.Errorf("stdout %q", out["stdout"])
		}
		msg := s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "true", "env": map[string]any{"1BAD": "x"}}, time.Minute)
		if field := errorField(msg); field != "env.1BAD" {
			t.Errorf("a bad variable name: %v", msg)
		}
	})
	t.Run("a background child does not hold the answer", func(t *testing.T) {
		// The second child writes once the command has ended: the answer
		// must not wait for it (Docker itself keeps the stream open for 2 s
		// after the command, and forever through some versions' API).
		started := time.Now()
		out := exec(t, map[string]any{"command": `sleep 100 & echo $! >/tmp/fg-child; ` +
			`(while kill -0 $$ 2>/dev/null; do sleep 0.01; done; sleep 0.5; echo late) & echo early`})
		t.Logf("a command leaving sleep 100 behind answered after %s", time.Since(started).Round(time.Millisecond))
		if out["stdout"] != "early\n" || out["exitCode"] != 0.0 || out["timedOut"] != false {
			t.Errorf("exec: %v", out)
		}
		alive := exec(t, map[string]any{"command": `kill -0 "$(cat /tmp/fg-child)" && echo alive; kill "$(cat /tmp/fg-child)"`})
		if alive["stdout"] != "alive\n" {
			t.Errorf("the background child after the answer: %v", alive)
		}
		out = exec(t, map[string]any{"command": `sleep 100 & exit 3`, "stdin": "x"})
		if out["exitCode"] != 3.0 {
			t.Errorf("exit code with a child left behind: %v", out)
		}
	})
	t.Run("a background server keeps serving, is listed, and is killed with its children", func(t *testing.T) {
		backgroundServer(t, s, project, exec)
	})
}

// backgroundServer starts python3 -m http.server in the background with
// two children (one in a process group of its own), and proves that it
// serves, is listed here and by another sidecar, and that sandbox/kill
// ends all three.
func backgroundServer(t *testing.T, s *sidecar, project string, exec func(*testing.T, map[string]any) map[string]any) {
	begun := time.Now()
	started := exec(t, map[string]any{"background": true, "workdir": "/tmp", "env": map[string]any{"PORT": "8765"},
		"command": `sleep 1001 & bash -c 'set -m; sleep 1002 & wait' & exec python3 -m http.server "$PORT" --bind 127.0.0.1`})
	t.Logf("the background exec answered after %s", time.Since(begun).Round(time.Millisecond))
	pid, logPath := started["pid"], started["logPath"]
	if pid == nil || !strings.HasPrefix(fmt.Sprint(logPath), "/tmp/pilot-bg/") || len(started) != 2 {
		t.Fatalf("background exec: %v", started)
	}
	get := `exec 3<>/dev/tcp/127.0.0.1/8765 && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && head -n 1 <&3`
	pollExec(t, s, project, "the background server answers", get)
	list := result(t, s.call("sandbox/processes", map[string]any{"projectPath": project}, time.Minute))["processes"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["pid"] != pid || !strings.Contains(fmt.Sprint(list[0].(map[string]any)["command"]), "http.server") {
		t.Errorf("processes: %v", list)
	}
	exposeThroughTheSidecar(t, s, project)
	other := startSidecar(t, "ndjson")
	result(t, other.call("initialize", map[string]any{}, 20*time.Second))
	// A sidecar that has just started says "no sandbox" until its first
	// look at the engine is over.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st := other.call("sandbox/status", map[string]any{"projectPath": project}, time.Minute)
		if r, _ := st["result"].(map[string]any); r != nil && r["status"] == "running" || time.Now().After(deadline) {
			break
		}
	}
	if seen := result(t, other.call("sandbox/processes", map[string]any{"projectPath": project}, time.Minute))["processes"].([]any); len(seen) != 1 {
		t.Errorf("another sidecar's processes: %v", seen)
	}
	if log := exec(t, map[string]any{"command": "cat " + fmt.Sprint(logPath)}); !strings.Contains(fmt.Sprint(log["stdout"]), `"GET / HTTP/1.0" 200`) {
		t.Errorf("the log: %v", log)
	}
	if msg := s.call("sandbox/kill", map[string]any{"projectPath": project, "pid": 1}, time.Minute); errorField(msg) != "pid" {
		t.Errorf("kill of a pid not started in the background: %v", msg)
	}
	killing := time.Now()
	killed := result(t, s.call("sandbox/kill", map[string]any{"projectPath": project, "pid": pid}, time.Minute))
	t.Logf("sandbox/kill of the server and its two children took %s", time.Since(killing).Round(time.Millisecond))
	left := exec(t, map[string]any{"command": `ps -eo args= | grep -E '^(sleep 100[12]|python3 -m http.server)' ; ` + get})
	if killed["killed"] != true || left["stdout"] != "" || left["exitCode"] == 0.0 {
		t.Errorf("kill: %v; left running: %v", killed, left)
	}
	if list := result(t, s.call("sandbox/processes", map[string]any{"projectPath": project}, time.Minute))["processes"].([]any); len(list) != 0 {
		t.Errorf("processes after the kill: %v", list)
	}
}

// exposeThroughTheSidecar exposes the server's port 8765 and reads its
// page on the host, through the protocol.
func exposeThroughTheSidecar(t *testing.T, s *sidecar, project string) {
	exposed := result(t, s.call("sandbox/ports/expose", map[string]any{"projectPath": project, "port": 8765}, time.Minute))
	url, _ := exposed["url"].(string)
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	page, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || !strings.Contains(string(page), "Directory listing") {
		t.Errorf("GET %s: %s, %q, %v", url, res.Status, page, err)
	}
	list := result(t, s.call("sandbox/ports/list", map[string]any{"projectPath": project}, time.Minute))
	if !strings.Contains(fmt.Sprint(list["listening"]), "port:8765 process:python3") || len(list["exposed"].([]any)) != 1 {
		t.Errorf("ports: %v", list)
	}
}

// streamedOutput joins the output notifications of token, per stream,
// checking each names the project.
func streamedOutput(t *testing.T, notes []map[string]any, project string, token any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range notes {
		if n["token"] != token || n["projectPath"] != project {
			t.Errorf("a notification for another token or project: %v", n)
			continue
		}
		out[n["stream"].(string)] += n["data"].(string)
	}
	return out
}

// streamOrder lists the streams of the notifications, a stream once for a
// run of notifications of it.
func streamOrder(notes []map[string]any) string {
	var order []string
	for _, n := range notes {
		if s := n["stream"].(string); len(order) == 0 || order[len(order)-1] != s {
			order = append(order, s)
		}
	}
	return strings.Join(order, " ")
}

func tail(s string) string { return s[max(len(s)-10, 0):] }

// errorField is an error reply's data.field, "" for a result.
func errorField(msg map[string]any) string {
	e, _ := msg["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	field, _ := data["field"].(string)
	return field
}

// pollExec runs a shell test in the sandbox until it succeeds, for up to
// 20 s.
func pollExec(t *testing.T, s *sidecar, project, what, test string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		msg := s.call("sandbox/exec", map[string]any{"projectPath": project, "command": test, "timeoutMs": 10000}, time.Minute)
		if r, _ := msg["result"].(map[string]any); r != nil && r["exitCode"] == 0.0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 20s: %v", what, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
