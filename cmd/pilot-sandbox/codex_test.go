package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServeCodexThroughTheGateway: the real Codex CLI, run as a task
// (agent codex), against a scripted Responses API on the host reached
// only through the model gateway, as the model provider the task gives
// it: its answer and usage come as events, and the API got the user's
// key, never the placeholder. The CLI is installed by the project's own
// Dockerfile (agentCLIProject), or comes from the image
// PILOT_TEST_CODEX_IMAGE names, until sandbox.agents installs it
// (docs/models.md).
func TestServeCodexThroughTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Codex CLI into an image and runs it")
	}
	key := "sk-proj-test-codex-0123456789"
	var mu sync.Mutex
	var auths, paths []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		auths, paths = append(auths, r.Header.Get("Authorization")), append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, data := range []string{
			`{"type":"response.created","response":{"id":"resp_1"}}`,
			`{"type":"response.output_item.done","item":{"type":"message","role":"assistant","id":"m1","content":[{"type":"output_text","text":"Hello from the script."}]}}`,
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
	for _, want := range []string{`"text":"Hello from the script."`, `"cachedInputTokens":3,"inputTokens":11,"outputTokens":4,"requests":1,"source":"gateway"`} {
		if !strings.Contains(transcript, want) {
			t.Errorf("the events lack %s:\n%s", want, transcript)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || paths[len(paths)-1] != "POST /v1/responses" {
		t.Errorf("the API got %v", paths)
	}
	for _, a := range auths {
		if a != "Bearer "+key {
			t.Errorf("the API got Authorization %q", a)
		}
	}
}
