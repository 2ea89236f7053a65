package tasks

import (
	"slices"
	"testing"
)

// The access's variables replace the request's of the same names, and
// its end is called once however often a start's failure and the task's
// end ask.
func TestModelAccess(t *testing.T) {
	env := withModels([]string{"A=1", "ANTHROPIC_API_KEY=mine", "PILOT_TASK=x"}, []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:15100/anthropic", "ANTHROPIC_API_KEY=pilot-gw-T"})
	want := []string{"A=1", "PILOT_TASK=x", "ANTHROPIC_BASE_URL=http://127.0.0.1:15100/anthropic", "ANTHROPIC_API_KEY=pilot-gw-T"}
	if !slices.Equal(env, want) {
		t.Errorf("env %q", env)
	}
	if got := withModels([]string{"A=1"}, nil); !slices.Equal(got, []string{"A=1"}) {
		t.Errorf("without access: %q", got)
	}
	calls := 0
	end := ModelAccess{End: func() Usage { calls++; return Usage{Requests: 2} }}.once()
	if u := end(); u == nil || u.Requests != 2 {
		t.Errorf("first end: %+v", u)
	}
	if u := end(); u != nil || calls != 1 {
		t.Errorf("second end: %+v, %d calls", u, calls)
	}
	if u := (ModelAccess{}).once()(); u != nil {
		t.Errorf("no access: %+v", u)
	}
}

// Codex is given the gateway as a model provider of its config, when the
// task has the gateway's OpenAI endpoint, and the sandbox's tools as an
// MCP server whose bearer token is named by its variable, never given;
// otherwise its argv is as asked.
func TestCodexConfig(t *testing.T) {
	argv := []string{"codex", "exec", "--json", "do it"}
	got := codexConfig(argv, []string{"OPENAI_BASE_URL=http://127.0.0.1:15100/openai/v1", "OPENAI_API_KEY=pilot-gw-T",
		"PILOT_MCP_URL=http://127.0.0.1:15100/mcp", "PILOT_MCP_TOKEN=pilot-gw-T"})
	want := []string{"codex", "exec", "-c", "model_provider=pilot-gateway", "-c", `model_providers.pilot-gateway.name="pilot-sandbox model gateway"`,
		"-c", `model_providers.pilot-gateway.base_url="http://127.0.0.1:15100/openai/v1"`, "-c", `model_providers.pilot-gateway.env_key="OPENAI_API_KEY"`,
		"-c", `model_providers.pilot-gateway.wire_api="responses"`,
		"-c", `mcp_servers.pilot-sandbox.url="http://127.0.0.1:15100/mcp"`, "-c", `mcp_servers.pilot-sandbox.bearer_token_env_var="PILOT_MCP_TOKEN"`,
		"--json", "do it"}
	if !slices.Equal(got, want) {
		t.Errorf("argv %q", got)
	}
	if got := codexConfig(argv, []string{"ANTHROPIC_BASE_URL=x"}); !slices.Equal(got, argv) {
		t.Errorf("without OpenAI: %q", got)
	}
	if got := codexConfig([]string{"sh", "-c", "codex"}, []string{"PILOT_MCP_URL=x"}); !slices.Equal(got, []string{"sh", "-c", "codex"}) {
		t.Errorf("not codex: %q", got)
	}
}

// Claude Code is given the sandbox's tools with --mcp-config, whose
// header names the token's variable, never the token.
func TestClaudeMCP(t *testing.T) {
	argv := []string{"claude", "-p", "hi", "--output-format", "stream-json", "--verbose"}
	got := claudeMCP(argv, []string{"PILOT_MCP_URL=http://127.0.0.1:15100/mcp", "PILOT_MCP_TOKEN=pilot-gw-T"})
	want := append(slices.Clone(argv), "--mcp-config",
		`{"mcpServers":{"pilot-sandbox":{"headers":{"Authorization":"Bearer ${PILOT_MCP_TOKEN}"},"type":"http","url":"http://127.0.0.1:15100/mcp"}}}`)
	if !slices.Equal(got, want) {
		t.Errorf("argv %q", got)
	}
	if got := claudeMCP(argv, nil); !slices.Equal(got, argv) {
		t.Errorf("without the tools: %q", got)
	}
}

// Claude Code and Codex run with their permission checks off: in -p and
// exec nobody can answer their prompts, Codex's own sandbox cannot start
// in the container, and the sandbox is the isolation (docs/tasks.md,
// Permissions).
func TestAgentsSkipPermissions(t *testing.T) {
	argv, err := StartRequest{Agent: AgentClaude, Prompt: "do it"}.argv()
	want := []string{"claude", "-p", "do it", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
	if err != nil || !slices.Equal(argv, want) {
		t.Errorf("claude argv %q, %v", argv, err)
	}
	argv, err = StartRequest{Agent: AgentCodex, Prompt: "do it"}.argv()
	if err != nil || !slices.Equal(argv, []string{"codex", "exec", "--dangerously-bypass-approvals-and-sandbox", "--json", "do it"}) {
		t.Errorf("codex argv %q, %v", argv, err)
	}
}
