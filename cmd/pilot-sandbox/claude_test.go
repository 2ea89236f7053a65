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

// scriptedClaude is a Messages API that drives Claude Code through a
// script: a request with tools and no tool result yet gets a Write of
// hello.txt, one with one tool result a Bash command, then words and
// the end of the turn. Requests without tools (a title, a check) get a
// short text. It records the credentials each request carried.
type scriptedClaude struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []string // x-api-key of each request
	auths   []string // Authorization of each request
	bodies  []string
	streams int
}

func newScriptedClaude(t *testing.T) *scriptedClaude {
	s := &scriptedClaude{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// claudeRequest is what the script reads of a Messages request.
type claudeRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (s *scriptedClaude) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	s.mu.Lock()
	s.keys, s.auths, s.bodies = append(s.keys, r.Header.Get("X-Api-Key")), append(s.auths, r.Header.Get("Authorization")), append(s.bodies, string(body))
	s.mu.Unlock()
	var req claudeRequest
	json.Unmarshal(body, &req)
	switch {
	case r.URL.Path == "/v1/messages/count_tokens":
		io.WriteString(w, `{"input_tokens": 100}`)
		return
	case r.URL.Path != "/v1/messages":
		http.NotFound(w, r)
		return
	}
	results := strings.Count(string(body), `"tool_result"`)
	var blocks []string
	stop := "end_turn"
	switch {
	case len(req.Tools) == 0:
		blocks = []string{textBlock("Scripted title")}
	case results == 0:
		blocks, stop = []string{toolBlock("toolu_1", "Write", `{"file_path": "/workspace/hello.txt", "content": "hello from claude\n"}`)}, "tool_use"
	case results == 1:
		blocks, stop = []string{toolBlock("toolu_2", "Bash", `{"command": "cat /workspace/hello.txt && echo ran-in-bash", "description": "show the file"}`)}, "tool_use"
	case results == 2:
		blocks, stop = []string{toolBlock("toolu_3", "mcp__pilot-sandbox__sandbox_screenshot", `{}`)}, "tool_use"
	case results == 3:
		blocks, stop = []string{toolBlock("toolu_4", "mcp__pilot-sandbox__sandbox_click", `{"x": 20, "y": 20}`)}, "tool_use"
	default:
		blocks = []string{textBlock("All done.")}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_x","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}`, req.Model)
		return
	}
	s.mu.Lock()
	s.streams++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	event(w, "message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":1}}}`, results, req.Model))
	for i, b := range blocks {
		for _, e := range strings.Split(fmt.Sprintf(b, i), "\n") {
			name, data, _ := strings.Cut(e, " ")
			event(w, name, data)
		}
	}
	event(w, "message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":12}}`, stop))
	event(w, "message_stop", `{"type":"message_stop"}`)
}

func event(w http.ResponseWriter, name, data string) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	w.(http.Flusher).Flush()
}

// textBlock and toolBlock are a content block's events, "NAME DATA" a
// line, with %[1]d for its index.
func textBlock(text string) string {
	quoted, _ := json.Marshal(text)
	return `content_block_start {"type":"content_block_start","index":%[1]d,"content_block":{"type":"text","text":""}}
content_block_delta {"type":"content_block_delta","index":%[1]d,"delta":{"type":"text_delta","text":` + strings.ReplaceAll(string(quoted), "%", "%%") + `}}
content_block_stop {"type":"content_block_stop","index":%[1]d}`
}

func toolBlock(id, name, input string) string {
	partial, _ := json.Marshal(input)
	return `content_block_start {"type":"content_block_start","index":%[1]d,"content_block":{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":{}}}
content_block_delta {"type":"content_block_delta","index":%[1]d,"delta":{"type":"input_json_delta","partial_json":` + strings.ReplaceAll(string(partial), "%", "%%") + `}}
content_block_stop {"type":"content_block_stop","index":%[1]d}`
}

// TestServeClaudeCodeThroughTheGateway: the real Claude Code CLI, run as
// a task (agent claude), against a scripted Messages API on the host
// reached only through the model gateway: its turns make it write a file
// and run a command; the events parsed from its stream-json, the diff,
// and the credentials the API got are checked. The CLI is installed by
// the agent CLIs' layer the project's sandbox.agents asks for
// (agentCLIProject), or comes from the image PILOT_TEST_CLAUDE_IMAGE
// names (docs/images.md).
func TestServeClaudeCodeThroughTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Claude Code CLI into an image and runs it")
	}
	key := "sk-ant-test-claude-0123456789"
	api := newScriptedClaude(t)
	project := taskProject(t)
	cas := agentCLIProject(t, project, "PILOT_TEST_CLAUDE_IMAGE", "claude")
	config := writeConfig(t.TempDir(), "models", fmt.Sprintf(`{"idleStop": "0", "maxRunning": 0, "disk": "0", %s
		"models": {"anthropic": {"apiKeyEnv": "PILOT_TEST_MODEL_KEY", "baseUrl": %q}}}`, cas, api.URL))
	state := t.TempDir()
	env := []string{ownScope(t), "XDG_CONFIG_HOME=" + config, "XDG_STATE_HOME=" + state, "PILOT_TEST_MODEL_KEY=" + key}
	if out, errOut, code := cliRun(t, env, "", "approve", "--yes", "--project", project); code != 0 {
		t.Fatalf("approve: %s %s", out, errOut)
	}
	s := startSidecar(t, "ndjson", env...)
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 10*time.Minute))
	// No settings allow the scripted turns' tools: the task runs Claude
	// Code with its permission checks off (docs/tasks.md, Permissions).
	started := result(t, s.call("sandbox/tasks/start", map[string]any{"projectPath": project, "agent": "claude", "prompt": "Write hello.txt, then show it."}, 2*time.Minute))
	id := started["taskId"].(string)
	fin, transcript := taskFinished(t, s, id, 5*time.Minute)
	if ev := fin["event"].(map[string]any); ev["status"] != "succeeded" {
		t.Fatalf("claude: %v\n%s", ev, transcript)
	}
	for _, want := range []string{`"name":"Write"`, `"name":"Bash"`, `"output":"hello from claude\nran-in-bash"`, `"text":"All done."`, `"source":"gateway"`,
		`"isError":false,"name":"mcp__pilot-sandbox__sandbox_screenshot"`, `"isError":false,"name":"mcp__pilot-sandbox__sandbox_click"`} {
		if !strings.Contains(transcript, want) {
			t.Errorf("the events lack %s:\n%s", want, transcript)
		}
	}
	diff := result(t, s.call("sandbox/tasks/diff", map[string]any{"taskId": id}, time.Minute))
	if !strings.Contains(diff["patch"].(string), "+hello from claude") {
		t.Errorf("diff: %v\n%s", diff["patch"], transcript)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.streams < 5 {
		t.Errorf("the API streamed %d turns", api.streams)
	}
	for i := range api.keys {
		if api.keys[i] != key || strings.Contains(api.auths[i]+api.bodies[i], "pilot-gw-") {
			t.Errorf("request %d: x-api-key %q, authorization %q", i, api.keys[i], api.auths[i])
		}
	}
}
