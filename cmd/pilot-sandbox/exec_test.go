package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestServeExec proves sandbox/exec's promises through the protocol, on a
// real sandbox: who and where the command runs, the timeout whatever the
// command does about it, the output cap, and programs left running.
func TestServeExec(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	s := startSidecar(t, "lsp")
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	exec := func(t *testing.T, command string, timeoutMs int) (map[string]any, time.Duration) {
		t.Helper()
		params := map[string]any{"projectPath": project, "command": command}
		if timeoutMs > 0 {
			params["timeoutMs"] = timeoutMs
		}
		started := time.Now()
		out := result(t, s.call("sandbox/exec", params, 2*time.Minute))
		return out, time.Since(started)
	}

	t.Run("as the sandbox user, with DISPLAY, under bash -l", func(t *testing.T) {
		out, _ := exec(t, `id -un; echo "$DISPLAY"; xdpyinfo >/dev/null && echo display-ok; shopt -q login_shell && echo login`, 0)
		if out["stdout"] != "sandbox\n:99\ndisplay-ok\nlogin\n" || out["exitCode"] != 0.0 {
			t.Errorf("exec: %v", out)
		}
	})
	t.Run("a non-zero exit is a result; stderr apart; workdir", func(t *testing.T) {
		params := map[string]any{"projectPath": project, "command": "pwd; echo oops >&2; exit 7", "workdir": "/tmp"}
		out := result(t, s.call("sandbox/exec", params, time.Minute))
		if out["stdout"] != "/tmp\n" || out["stderr"] != "oops\n" || out["exitCode"] != 7.0 || out["timedOut"] != false {
			t.Errorf("exec: %v", out)
		}
	})
	t.Run("timeout when the command ignores signals", func(t *testing.T) {
		out, took := exec(t, `trap '' TERM INT HUP; sleep 60; echo never`, 1000)
		t.Logf("a 1 s timeout on a command ignoring SIGTERM answered after %s", took.Round(time.Millisecond))
		if out["timedOut"] != true || strings.Contains(out["stdout"].(string), "never") {
			t.Errorf("exec: %v", out)
		}
	})
	t.Run("timeout when a child leaves the process group holding stdout", func(t *testing.T) {
		out, took := exec(t, `setsid sleep 60 & echo started; sleep 60`, 1000)
		t.Logf("a 1 s timeout with an escaped child holding stdout answered after %s", took.Round(time.Millisecond))
		if out["timedOut"] != true || out["stdout"] != "started\n" {
			t.Errorf("exec: %v", out)
		}
	})
	t.Run("a child holding stdout after the command ended", func(t *testing.T) {
		out, took := exec(t, `sleep 30 & echo started`, 0)
		t.Logf("a command whose background child holds stdout answered after %s", took.Round(time.Millisecond))
		if out["stdout"] != "started\n" || out["exitCode"] != 0.0 {
			t.Errorf("exec: %v", out)
		}
	})
	t.Run("stdout and stderr capped at 10 MiB each", func(t *testing.T) {
		out, took := exec(t, `head -c 12582912 /dev/zero | tr '\0' a; head -c 12582912 /dev/zero | tr '\0' b >&2; echo done >&2`, 0)
		t.Logf("12 MiB on each stream answered after %s", took.Round(time.Millisecond))
		stdout, stderr := out["stdout"].(string), out["stderr"].(string)
		if len(stdout) != 10<<20 || strings.Trim(stdout, "a") != "" || len(stderr) != 10<<20 || strings.Trim(stderr, "b") != "" || out["truncated"] != true {
			t.Errorf("exec: stdout %d bytes, stderr %d bytes, truncated %v", len(stdout), len(stderr), out["truncated"])
		}
		out, _ = exec(t, `head -c 1048576 /dev/zero | tr '\0' a`, 0)
		if len(out["stdout"].(string)) != 1<<20 || out["truncated"] != false {
			t.Errorf("1 MiB: %d bytes, truncated %v", len(out["stdout"].(string)), out["truncated"])
		}
	})
	t.Run("output that JSON escapes is capped as the reply encodes it", func(t *testing.T) {
		// 10 MiB of NUL bytes made a 126 MB reply: JSON writes each as \u0000.
		out, _ := exec(t, `head -c 10485760 /dev/zero; head -c 10485760 /dev/zero | tr '\0' '<' >&2`, 0)
		reply, _ := json.Marshal(out)
		t.Logf("10 MiB of NUL bytes on stdout and of '<' on stderr: a reply of %d bytes; the sidecar's peak RSS %s", len(reply), s.peakRSS())
		stdout, stderr := out["stdout"].(string), out["stderr"].(string)
		for _, o := range []struct{ name, text, char string }{{"stdout", stdout, "\x00"}, {"stderr", stderr, "<"}} {
			encoded, _ := json.Marshal(o.text)
			if len(encoded)-2 > 10<<20 || len(encoded)-2 < 10<<20-6 || strings.Trim(o.text, o.char) != "" {
				t.Errorf("%s: %d bytes, %d encoded; want all %q, encoded in at most 10 MiB", o.name, len(o.text), len(encoded)-2, o.char)
			}
		}
		if out["truncated"] != true || len(reply) > 21<<20 {
			t.Errorf("truncated %v, a reply of %d bytes", out["truncated"], len(reply))
		}
	})
	t.Run("a background program with redirected output keeps running", func(t *testing.T) {
		out, _ := exec(t, `nohup sleep 300 >/dev/null 2>&1 & echo $!`, 0)
		pid, err := strconv.Atoi(strings.TrimSpace(out["stdout"].(string)))
		if err != nil || out["exitCode"] != 0.0 {
			t.Fatalf("exec: %v", out)
		}
		out, _ = exec(t, "ps -o user=,comm= -p "+strconv.Itoa(pid), 0)
		if strings.Join(strings.Fields(out["stdout"].(string)), " ") != "sandbox sleep" {
			t.Errorf("the background program after the call returned: %q", out["stdout"])
		}
	})
	t.Run("output that is not UTF-8", func(t *testing.T) {
		out, _ := exec(t, `printf 'ok \377\376 end'`, 0)
		if out["stdout"] != "ok \uFFFD end" {
			t.Errorf("stdout %q", out["stdout"])
		}
	})

	result(t, s.call("sandbox/stop", map[string]any{"projectPath": project}, time.Minute))
	if msg := s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "true"}, time.Minute); errorKind(msg) != "not_running" {
		t.Errorf("exec on a stopped sandbox: %v", msg)
	}
}

// errorKind is an error reply's data.kind, "" for a result.
func errorKind(msg map[string]any) string {
	e, _ := msg["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	kind, _ := data["kind"].(string)
	return kind
}
