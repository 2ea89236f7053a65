package tasks

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// Models gives tasks the model gateway (docs/models.md). Open, as a task
// starts, returns what the task's environment gets: the gateway's
// address inside the sandbox and the task's placeholder tokens, never a
// key; with no provider configured, nothing.
//
// Reopen, as a later sidecar reattaches to a running task, takes the
// task's access again from what Open's access said to keep (its token
// and its port inside the sandbox), so that the agent's model calls go
// on answered; the usage counts on from used.
type Models interface {
	Open(ctx context.Context, project, task string) (ModelAccess, error)
	Reopen(ctx context.Context, project, task string, kept KeptAccess) (ModelAccess, error)
}

// ModelAccess is a task's access to the model gateway.
type ModelAccess struct {
	// Env goes into every exec of the task (its names replace the
	// request's).
	Env []string
	// End kills the task's tokens and returns what its model calls used;
	// nil when there is nothing to end.
	End func() Usage
	// Used is what the task's model calls used so far (nil with End).
	Used func() Usage
	// Resume is what Reopen needs, kept while the task runs (opaque
	// here).
	Resume json.RawMessage
}

// KeptAccess is a running task's access to the model gateway as kept in
// the user's state for a sidecar that reattaches (records.saveAccess).
type KeptAccess struct {
	Resume json.RawMessage `json:"resume"`
	Used   Usage           `json:"used"`
}

// SourceGateway marks a usage event the sidecar's gateway counted from
// the model APIs' responses (the agent's own reports have no source).
const SourceGateway = "gateway"

// openModels opens the task's access, if the manager has a gateway.
func (m *Manager) openModels(ctx context.Context, project, id string) (ModelAccess, error) {
	if m.opts.Models == nil {
		return ModelAccess{}, nil
	}
	return m.opts.Models.Open(ctx, project, id)
}

// once makes End callable more than once (a start that fails, then the
// task's end): the second call returns nothing.
func (a ModelAccess) once() func() *Usage {
	if a.End == nil {
		return func() *Usage { return nil }
	}
	var o sync.Once
	return func() *Usage {
		var u *Usage
		o.Do(func() { got := a.End(); u = &got })
		return u
	}
}

// withModels is env with the access's variables, which replace the
// request's of the same names.
func withModels(env, access []string) []string {
	if len(access) == 0 {
		return env
	}
	names := map[string]bool{}
	for _, kv := range access {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	out := make([]string, 0, len(env)+len(access))
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	return append(out, access...)
}

// reopenModels takes a reattached task's access to the model gateway
// again, if the sidecar that started it kept one; without it the task
// goes on, its model calls refused (docs/models.md, Limits).
func (m *Manager) reopenModels(ctx context.Context, t *task) {
	rec := t.record()
	kept, ok := m.records.loadAccess(rec.ID)
	if !ok || m.opts.Models == nil {
		return
	}
	access, err := m.opts.Models.Reopen(ctx, rec.ProjectPath, rec.ID, kept)
	if err != nil {
		m.opts.Logger.Warn().Err(err).Str("task", rec.ID).Msg("could not take the task's access to the model gateway again: unless another sidecar of the user's serves it, its model calls are refused")
		return
	}
	t.keepAccess(access)
}

// keepAccess makes t end access as it ends and keep it while it runs.
func (t *task) keepAccess(access ModelAccess) {
	t.endModels, t.usedModels, t.resume = access.once(), access.Used, access.Resume
}

// kept is the task's access as saveAccess keeps it; false if there is
// none to keep.
func (t *task) kept() (KeptAccess, bool) {
	if t.resume == nil {
		return KeptAccess{}, false
	}
	k := KeptAccess{Resume: t.resume}
	if t.usedModels != nil {
		k.Used = t.usedModels()
	}
	return k, true
}

// saveAccess keeps the task's access for a sidecar that reattaches; a
// failure is logged (the task goes on; only a reattach would miss it).
func (m *Manager) saveAccess(t *task) {
	k, ok := t.kept()
	if !ok {
		return
	}
	if err := m.records.saveAccess(t.record().ID, k); err != nil {
		m.opts.Logger.Warn().Err(err).Str("task", t.record().ID).Msg("keep the task's access to the model gateway")
	}
}

// endAccess ends the task's access to the model gateway, if this process
// opened one, and returns its usage the first time.
func (t *task) endAccess() *Usage {
	if t.endModels == nil {
		return nil
	}
	return t.endModels()
}

// codexConfig gives Codex, as -c flags after "exec", the gateway as its
// model provider when the task has the gateway's OpenAI endpoint, and the
// sandbox's own tools (PILOT_MCP_URL) as an MCP server. Codex takes no
// base URL from its environment (0.171.0 went to its own host with
// OPENAI_BASE_URL set, measured), only from a provider of its config; its
// key is the token, by env_key, and the MCP server's bearer token by
// bearer_token_env_var, so the argv (kept in the task's record) holds
// none.
func codexConfig(argv, access []string) []string {
	if len(argv) < 2 || argv[0] != "codex" {
		return argv
	}
	var flags []string
	if base := accessVar(access, "OPENAI_BASE_URL"); base != "" {
		flags = append(flags,
			"-c", "model_provider=pilot-gateway",
			"-c", `model_providers.pilot-gateway.name="pilot-sandbox model gateway"`,
			"-c", `model_providers.pilot-gateway.base_url="`+base+`"`,
			"-c", `model_providers.pilot-gateway.env_key="OPENAI_API_KEY"`,
			"-c", `model_providers.pilot-gateway.wire_api="responses"`)
	}
	if url := accessVar(access, "PILOT_MCP_URL"); url != "" {
		flags = append(flags,
			"-c", `mcp_servers.pilot-sandbox.url="`+url+`"`,
			"-c", `mcp_servers.pilot-sandbox.bearer_token_env_var="PILOT_MCP_TOKEN"`)
	}
	return slices.Concat(argv[:2], flags, argv[2:])
}

// accessVar is the value of the access's variable name, or "".
func accessVar(access []string, name string) string {
	for _, kv := range access {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// claudeMCP gives Claude Code the sandbox's own tools (PILOT_MCP_URL, an
// MCP server over HTTP the sidecar carries in) with --mcp-config. The
// token stays in the environment: Claude Code expands ${PILOT_MCP_TOKEN}
// in the config's headers, so the argv (kept in the task's record) holds
// none.
func claudeMCP(argv, access []string) []string {
	url := accessVar(access, "PILOT_MCP_URL")
	if url == "" || len(argv) == 0 || argv[0] != "claude" {
		return argv
	}
	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"pilot-sandbox": map[string]any{
		"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer ${PILOT_MCP_TOKEN}"},
	}}})
	return append(slices.Clone(argv), "--mcp-config", string(config))
}
