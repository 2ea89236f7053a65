package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedAPI is a Messages API of the test's own, on the host: a
// streamed message sends message_start, then the rest only once
// count_tokens was asked (so a client sees the first event before the
// stream ends, or waits forever); it records every request.
type scriptedAPI struct {
	*httptest.Server
	counted  chan struct{}
	once     sync.Once
	mu       sync.Mutex
	requests []seenRequest
}

type seenRequest struct {
	host, uri, body string
	header          http.Header
}

func newScriptedAPI(t *testing.T) *scriptedAPI {
	api := &scriptedAPI{counted: make(chan struct{})}
	api.Server = httptest.NewServer(http.HandlerFunc(api.serve))
	t.Cleanup(api.Close)
	return api
}

func (api *scriptedAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	api.mu.Lock()
	api.requests = append(api.requests, seenRequest{r.Host, r.RequestURI, string(body), r.Header.Clone()})
	api.mu.Unlock()
	switch {
	case r.URL.Path == "/v1/messages/count_tokens":
		api.once.Do(func() { close(api.counted) })
		io.WriteString(w, `{"input_tokens":42}`)
	case r.URL.Path == "/v1/messages" && strings.Contains(string(body), `"stream": true`):
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1,\"cache_read_input_tokens\":7}}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-api.counted:
		case <-time.After(time.Minute):
			return
		}
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	case r.URL.Path == "/v1/messages":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","usage":{"input_tokens":3,"output_tokens":2}}`)
	default:
		http.NotFound(w, r)
	}
}

func (api *scriptedAPI) seen() []seenRequest {
	api.mu.Lock()
	defer api.mu.Unlock()
	return append([]seenRequest(nil), api.requests...)
}

// runCommandTask starts a command task and waits for its end; it returns its
// output lines and its events.
func runCommandTask(t *testing.T, s *sidecar, project string, argv ...string) ([]string, []map[string]any) {
	t.Helper()
	started := result(t, s.call("sandbox/tasks/start", map[string]any{"projectPath": project, "agent": "command", "command": argv}, 2*time.Minute))
	id := started["taskId"].(string)
	fin := s.waitNotification("sandbox/task", func(p map[string]any) bool {
		return p["taskId"] == id && p["event"].(map[string]any)["type"] == "finished"
	}, 3*time.Minute)
	lines, events := taskOutput(s, id)
	if ev := fin["event"].(map[string]any); ev["status"] != "succeeded" {
		t.Fatalf("the task %v: %v\n%s", argv[:2], ev, strings.Join(lines, "\n"))
	}
	return lines, events
}

// taskOutput is a task's output lines and its events, as s heard them.
func taskOutput(s *sidecar, id string) ([]string, []map[string]any) {
	var lines []string
	var events []map[string]any
	for _, n := range s.notifications("sandbox/task") {
		if n["taskId"] != id {
			continue
		}
		ev := n["event"].(map[string]any)
		events = append(events, ev)
		if ev["type"] == "line" {
			lines = append(lines, ev["text"].(string))
		}
	}
	return lines, events
}

// lineWith is the first line that starts with prefix, without it.
func lineWith(lines []string, prefix string) (string, bool) {
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			return rest, true
		}
	}
	return "", false
}

// TestServeModelGateway: a task's model calls go through the gateway to a
// scripted API on the host, which gets the user's key and never the
// task's placeholder; a stream arrives in pieces; the usage reaches the
// task's events. A hostile task gets refusals it can read. After both,
// the key is nowhere in the sandbox (processes' environments, files,
// docker inspect), the sidecar's log or its state.
func TestServeModelGateway(t *testing.T) {
	key := "sk-ant-test-" + rand.Text()
	api := newScriptedAPI(t)
	project := taskProject(t)
	config := writeConfig(t.TempDir(), "models", fmt.Sprintf(`{"idleStop": "0", "maxRunning": 0, "disk": "0",
		"models": {"anthropic": {"apiKeyEnv": "PILOT_TEST_MODEL_KEY", "baseUrl": %q}}}`, api.URL))
	state := t.TempDir()
	s := startSidecar(t, "ndjson", ownScope(t), "XDG_CONFIG_HOME="+config, "XDG_STATE_HOME="+state, "PILOT_TEST_MODEL_KEY="+key)
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	st := result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	client, err := os.ReadFile("testdata/gateway_client.py")
	if err != nil {
		t.Fatal(err)
	}

	lines, events := runCommandTask(t, s, project, "python3", "-c", string(client), "stream")
	token, _ := lineWith(lines, "token ")
	first, _ := lineWith(lines, "first ")
	stop, _ := lineWith(lines, "stop ")
	if !strings.HasPrefix(token, "pilot-gw-") || first != "event: message_start" || stop != "True" {
		t.Fatalf("the streamed call: %q", lines)
	}
	if u := gatewayUsage(events); u != `{"cachedInputTokens":7,"inputTokens":25,"outputTokens":15,"requests":2,"source":"gateway","timeMs":0,"type":"usage"}` {
		t.Errorf("the gateway's usage event: %s", u)
	}
	checkSeen(t, api.seen(), key, token, 2)

	lines, _ = runCommandTask(t, s, project, "python3", "-c", string(client), "hostile", token)
	checkHostile(t, lines)
	for _, r := range api.seen() {
		if r.host != strings.TrimPrefix(api.URL, "http://") {
			t.Errorf("the API got Host %q", r.host)
		}
	}
	checkSeen(t, api.seen(), key, token, 3)

	searchInside(t, s, project, key, token)
	inspect, err := exec.Command("docker", "inspect", st["containerId"].(string)).CombinedOutput()
	if err != nil || strings.Contains(string(inspect), key) {
		t.Errorf("docker inspect: %v, holds the key: %v", err, strings.Contains(string(inspect), key))
	}
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if data, _ := os.ReadFile(path); err == nil && !d.IsDir() && strings.Contains(string(data), key) {
			t.Errorf("the key is in the state file %s", path)
		}
		return nil
	})
	if strings.Contains(s.stderr.String(), key) {
		t.Error("the key is in the sidecar's log")
	}
}

// gatewayUsage is the task's usage event from the gateway, as JSON with
// its time zeroed.
func gatewayUsage(events []map[string]any) string {
	for _, ev := range events {
		if ev["type"] == "usage" && ev["source"] == "gateway" {
			ev["timeMs"] = 0
			raw, _ := json.Marshal(ev)
			return string(raw)
		}
	}
	return "(none)"
}

// checkSeen: the API got n requests, each with the user's key, none with
// the placeholder anywhere.
func checkSeen(t *testing.T, seen []seenRequest, key, token string, n int) {
	t.Helper()
	if len(seen) != n {
		t.Errorf("the API got %d requests, want %d: %v", len(seen), n, seen)
	}
	for _, r := range seen {
		all := fmt.Sprint(r.header) + r.uri + r.body
		if r.header.Get("X-Api-Key") != key || r.header.Get("Authorization") != "" || strings.Contains(all, token) {
			t.Errorf("the API got %s with headers %v", r.uri, r.header)
		}
	}
}

// checkHostile: each of the hostile task's tries got its refusal.
func checkHostile(t *testing.T, lines []string) {
	t.Helper()
	want := map[string]string{
		"files":    "403 ",
		"openai":   "404 ",
		"dead":     "401 ",
		"absolute": "400 ",
		"connect":  "405 ",
		"host":     "200 ",
		"mcp-dead": "401 ",
	}
	says := map[string]string{
		"files": "is not one of the anthropic model API paths", "openai": "openai is not configured",
		"dead": "not a running task's", "absolute": "no absolute URL", "connect": "does not tunnel", "host": `"usage"`, "mcp-dead": "need a running task's token",
	}
	scanned := 0
	for name, status := range want {
		got, ok := lineWith(lines, "case "+name+" ")
		if !ok || !strings.HasPrefix(got, status) || !strings.Contains(got, says[name]) {
			t.Errorf("%s: %q", name, got)
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "case scan-") {
			scanned++
			if !strings.Contains(l, " 401 ") || !strings.Contains(l, "no token") {
				t.Errorf("a port without a token: %q", l)
			}
		}
	}
	if scanned == 0 {
		t.Errorf("the scan found no gateway port: %q", lines)
	}
}

// searchInside looks for the key, as the sandbox user, in every readable
// /proc/*/environ, /workspace, /home, /tmp and /etc; the token, in a
// process the task left running, is the search's proof that it sees
// the tasks' environments.
func searchInside(t *testing.T, s *sidecar, project, key, token string) {
	t.Helper()
	script := `K=$(printf %s ` + base64.StdEncoding.EncodeToString([]byte(key)) + ` | base64 -d); T=` + token + `
n=0
for f in /proc/[0-9]*/environ; do
  [ -r "$f" ] && n=$((n+1))
  grep -qaF -- "$K" "$f" 2>/dev/null && echo "KEY in $f"
  grep -qaF -- "$T" "$f" 2>/dev/null && echo "token in $f"
done
grep -rlaF -- "$K" /workspace /home /tmp /etc 2>/dev/null | sed 's/^/KEY in /'
echo "readable $n"`
	out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": script}, 2*time.Minute))
	stdout, _ := out["stdout"].(string)
	if strings.Contains(stdout, "KEY in") || !strings.Contains(stdout, "token in /proc/") || strings.Contains(stdout, "readable 0") {
		t.Errorf("the search inside: %v", out)
	}
}

// TestCommandLineTaskReachesTheGateway: a terminal's task run, a process
// with no relays of serve's, carries its own gateway into the sandbox:
// the streamed call goes through, and the API gets the key.
func TestCommandLineTaskReachesTheGateway(t *testing.T) {
	key := "sk-ant-test-" + rand.Text()
	api := newScriptedAPI(t)
	project := taskProject(t)
	config := writeConfig(t.TempDir(), "models", fmt.Sprintf(`{"idleStop": "0", "maxRunning": 0, "disk": "0",
		"models": {"anthropic": {"apiKeyEnv": "PILOT_TEST_MODEL_KEY", "baseUrl": %q}}}`, api.URL))
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + config, ownScope(t), "PILOT_TEST_MODEL_KEY=" + key}
	if out, errOut, code := cliRun(t, env, "", "start", "--project", project); code != 0 {
		t.Fatalf("start: %d %s %s", code, out, errOut)
	}
	client, err := os.ReadFile("testdata/gateway_client.py")
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cliRun(t, env, "", "task", "run", "--project", project, "--", "python3", "-c", string(client), "stream")
	if code != 0 || !strings.Contains(out, "first event: message_start") || !strings.Contains(out, "stop True") {
		t.Fatalf("task run: %d %q %q", code, out, errOut)
	}
	token, _ := lineWith(strings.Split(out, "\n"), "token ")
	checkSeen(t, api.seen(), key, token, 2)
}

// TestServeGatewayAfterARestart: the sidecar that started a task is
// killed between two of its model calls; the next one follows the task
// again and takes its access to the gateway again (same port inside, same
// token), so the second call is answered with the user's key, and the
// usage counts both. The token is kept in the user's state only while
// the task runs, and in no record a client gets.
func TestServeGatewayAfterARestart(t *testing.T) {
	key := "sk-ant-test-" + rand.Text()
	api := newScriptedAPI(t)
	project := taskProject(t)
	config := "XDG_CONFIG_HOME=" + writeConfig(t.TempDir(), "models", fmt.Sprintf(`{"idleStop": "0", "maxRunning": 0, "disk": "0",
		"models": {"anthropic": {"apiKeyEnv": "PILOT_TEST_MODEL_KEY", "baseUrl": %q}}}`, api.URL))
	stateDir := t.TempDir()
	env := []string{ownScope(t), config, "XDG_STATE_HOME=" + stateDir, "PILOT_TEST_MODEL_KEY=" + key}
	client, err := os.ReadFile("testdata/gateway_client.py")
	if err != nil {
		t.Fatal(err)
	}
	first := startSidecar(t, "ndjson", env...)
	result(t, first.call("initialize", map[string]any{}, 20*time.Second))
	result(t, first.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	started := result(t, first.call("sandbox/tasks/start", map[string]any{
		"projectPath": project, "agent": "command", "command": []string{"python3", "-c", string(client), "restart", "/tmp/go-on"},
	}, 2*time.Minute))
	id := started["taskId"].(string)
	kept := filepath.Join(stateDir, "pilot-sandbox", "tasks", "models", id+".json")
	waitKept(t, kept, 1)
	first.cmd.Process.Kill()
	first.cmd.Wait()

	next := startSidecar(t, "ndjson", env...)
	result(t, next.call("initialize", map[string]any{}, 20*time.Second))
	result(t, next.call("sandbox/exec", map[string]any{"projectPath": project, "command": "touch /tmp/go-on"}, time.Minute))
	fin := next.waitNotification("sandbox/task", func(p map[string]any) bool {
		return p["taskId"] == id && p["event"].(map[string]any)["type"] == "finished"
	}, 3*time.Minute)
	lines, events := taskOutput(next, id)
	lines = slices.DeleteFunc(lines, func(l string) bool { return l == "waiting" })
	if second, _ := lineWith(lines, "second "); fin["event"].(map[string]any)["status"] != "succeeded" || !strings.HasPrefix(second, "200 ") {
		t.Fatalf("after the restart: %v, lines %q", fin["event"], lines)
	}
	if u := gatewayUsage(events); u != `{"inputTokens":6,"outputTokens":4,"requests":2,"source":"gateway","timeMs":0,"type":"usage"}` {
		t.Errorf("the gateway's usage event: %s", u)
	}
	checkSeen(t, api.seen(), key, "pilot-gw-", 2)
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("the task's kept access is still there after its end: %v", err)
	}
	records, _ := filepath.Glob(filepath.Join(stateDir, "pilot-sandbox", "tasks", "*.json"))
	for _, r := range records {
		if data, _ := os.ReadFile(r); strings.Contains(string(data), "pilot-gw-") {
			t.Errorf("a task record holds a token: %s", data)
		}
	}
}

// waitKept waits until the task's kept access counts requests model
// calls (the task saves it every 2 s while its agent prints).
func waitKept(t *testing.T, file string, requests int64) {
	t.Helper()
	var got struct {
		Resume struct{ Token string }
		Used   struct{ Requests int64 }
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		data, err := os.ReadFile(file)
		if err == nil && json.Unmarshal(data, &got) == nil && got.Used.Requests == requests && strings.HasPrefix(got.Resume.Token, "pilot-gw-") {
			return
		}
	}
	t.Fatalf("the task's kept access never counted %d requests: %+v", requests, got)
}
