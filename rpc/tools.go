package rpc

import (
	"context"
	"encoding/json"

	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// Tools is what tools/list and tools/call serve; *tools.Set is one.
type Tools interface {
	// List returns every agent tool.
	List() []tools.Tool
	// Call runs a tool for a project. Failures the model can correct come
	// back as a Result with IsError; an error is for an unknown tool or a
	// failure of the sidecar itself.
	Call(ctx context.Context, project, name string, arguments json.RawMessage) (tools.Result, error)
}

// ToolAccess is the rest of what tools/list and tools/call need:
// whether the project's agent tools are on, and, for the idle policy,
// that a tool call used the project's sandbox. *service.Manager is one.
type ToolAccess interface {
	ToolsEnabled(project string) (bool, error)
	Touch(project string)
}

// Params and results of tools/list and tools/call.
type (
	toolsListResult struct {
		Tools []tools.Tool `json:"tools"`
	}
	toolsCallParams struct {
		projectParams
		Name      string          `json:"name" jsonschema:"The tool's name, as tools/list gives it."`
		Arguments json.RawMessage `json:"arguments,omitempty" jsonschema:"The tool's arguments, as its inputSchema describes them; may be left out for a tool that takes none."`
	}
)

// listTools lists nothing for a project whose agent tools are off: a
// disabled project costs the agent no tokens.
func (s *Server) listTools(_ context.Context, _ *session, p projectParams) (toolsListResult, error) {
	enabled, err := s.svc.ToolAccess.ToolsEnabled(string(p.ProjectPath))
	if err != nil || !enabled {
		return toolsListResult{Tools: []tools.Tool{}}, err
	}
	return toolsListResult{Tools: s.svc.Tools.List()}, nil
}

func (s *Server) callTool(ctx context.Context, _ *session, p toolsCallParams) (tools.Result, error) {
	enabled, err := s.svc.ToolAccess.ToolsEnabled(string(p.ProjectPath))
	if err != nil {
		return tools.Result{}, err
	}
	if !enabled {
		return tools.Result{}, errToolsDisabled
	}
	s.svc.ToolAccess.Touch(string(p.ProjectPath)) // a use, for the idle policy
	return s.svc.Tools.Call(ctx, string(p.ProjectPath), p.Name, p.Arguments)
}
