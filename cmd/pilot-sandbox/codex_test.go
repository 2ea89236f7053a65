package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// codexScript is the scripted turn's input to Codex's exec tool (as a
// JSON string): a command that writes a file, then the sandbox's own
// screenshot and click through the MCP server the task gives Codex.
var codexScript = func() string {
	js, _ := json.Marshal(`const r = await tools.exec_command({cmd: "echo made by codex > codex.txt && id -un"});
text(r.output);
const shot = await tools.mcp__pilot_sandbox__sandbox_screenshot({});
text("shot " + shot.content.map((c) => c.type).join(","));
const click = await tools.mcp__pilot_sandbox__sandbox_click({x: 5, y: 5});
text("click " + (click.isError ? "error " + JSON.stringify(click.content) : "ok"));`)
	return string(js)
}()

// TestServeCodexThroughTheGateway: the real Codex CLI, run as a task
// (agent codex), against a scripted Responses API on the host reached
// only through the model gateway, as the model provider the task gives
// it. The script's first turn has Codex run a command that writes a file
// and call the sandbox's screenshot and click (its exec tool: JavaScript
// calling tools.exec_command and the MCP tools), its second answers: the
// command's output and the tools' results reach the API, the file is in
// the task's diff, the answer and usage come as events, and the API got
// the user's key, never the placeholder. The CLI comes from the
// project's sandbox.agents (agentCLIProject), or from the image
// PILOT_TEST_CODEX_IMAGE names.
func TestServeCodexThroughTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Codex CLI into an image and runs it")
	}
	key := "sk-proj-test-codex-0123456789"
	var mu sync.Mutex
	var auths, paths, bodies []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		mu.Lock()
		auths, paths, bodies = append(auths, r.Header.Get("Authorization")), append(paths, r.Method+" "+r.URL.Path), append(bodies, string(body))
		mu.Unlock()
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		item := `{"type":"message","role":"assistant","id":"m1","content":[{"type":"output_text","text":"Hello from the script."}]}`
		if !strings.Contains(string(body), `"custom_tool_call_output"`) {
			item = `{"type":"custom_tool_call","id":"ctc_1","call_id":"call_1","name":"exec","input":` + codexScript + `}`
		}
		for _, data := range []string{
			`{"type":"response.created","response":{"id":"resp_1"}}`,
			`{"type":"response.output_item.done","item":` + item + `}`,
			`{"type":"response.completed","response":{"id":"resp_1","usage":{"input_tokens":11,"input_tokens_details":{"cached_tokens":3},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}}}`,
		} {
			name := strings.SplitN(strings.TrimPrefix(data, `{"type":"`), `"`, 2)[0]
			event(w, name, data)
		}
	}))
	t.Cleanup(api.Close)
	project := taskProject(t)
	cas := agentCLIProject(t, project, "PILOT_TEST_CODEX_IMAGE", "codex")
	config := writeConfig(t.TempDir(), "models", fmt.Sprintf(`{"idleStop": "0", "maxRunning": 0, "disk": "0", %s
		"models": {"openai": {"apiKeyEnv": "PILOT_TEST_MODEL_KEY", "baseUrl": %q}}}`, cas, api.URL))
	env := []string{ownScope(t), "XDG_CONFIG_HOME=" + config, "XDG_STATE_HOME=" + t.TempDir(), "PILOT_TEST_MODEL_KEY=" + key}
	if out, errOut, code := cliRun(t, env, "", "approve", "--yes", "--project", project); code != 0 {
		t.Fatalf("approve: %s %s", out, errOut)
	}
	s := startSidecar(t, "ndjson", env...)
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 10*time.Minute))
	started := result(t, s.call("sandbox/tasks/start", map[string]any{"projectPath": project, "agent": "codex", "prompt": "Say hello."}, 2*time.Minute))
	id := started["taskId"].(string)
	fin, transcript := taskFinished(t, s, id, 5*time.Minute)
	if ev := fin["event"].(map[string]any); ev["status"] != "succeeded" {
		t.Fatalf("codex: %v\n%s", ev, transcript)
	}
	for _, want := range []string{`"name":"command","output":"sandbox\n"`, `"text":"Hello from the script."`, `"cachedInputTokens":6,"inputTokens":22,"outputTokens":8,"requests":2,"source":"gateway"`} {
		if !strings.Contains(transcript, want) {
			t.Errorf("the events lack %s:\n%s", want, transcript)
		}
	}
	diff := result(t, s.call("sandbox/tasks/diff", map[string]any{"taskId": id}, time.Minute))
	if !strings.Contains(diff["patch"].(string), "+made by codex") {
		t.Errorf("diff: %v\n%s", diff["patch"], transcript)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || paths[len(paths)-1] != "POST /v1/responses" {
		t.Errorf("the API got %v", paths)
	}
	if last := bodies[len(bodies)-1]; !strings.Contains(last, `sandbox\n`) || !strings.Contains(last, "shot image") ||
		!strings.Contains(last, "click ok") || strings.Contains(last, "pilot-gw-") {
		t.Errorf("the command's output (the sandbox user) and the sandbox tools' did not reach the API: %.3000s", last)
	}
	for _, a := range auths {
		if a != "Bearer "+key {
			t.Errorf("the API got Authorization %q", a)
		}
	}
}
