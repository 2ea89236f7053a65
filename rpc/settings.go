package rpc

import "context"

// Settings is what sandbox/getToolsEnabled and sandbox/setToolsEnabled
// need: the project's switch of its agent tools (dockerToolsEnabled in
// .pilot/settings.json).
type Settings interface {
	ToolsEnabled(project string) (bool, error)
	SetToolsEnabled(project string, enabled bool) (bool, error)
}

// Params and result of the switch.
type (
	setToolsParams struct {
		projectParams
		Enabled bool `json:"enabled" jsonschema:"Whether the project's agent tools are on."`
	}
	toolsEnabledResult struct {
		Enabled bool `json:"enabled"`
	}
)

func (s *Server) setToolsEnabled(_ context.Context, _ *session, p setToolsParams) (toolsEnabledResult, error) {
	enabled, err := s.svc.Settings.SetToolsEnabled(string(p.ProjectPath), p.Enabled)
	return toolsEnabledResult{Enabled: enabled}, err
}

func (s *Server) getToolsEnabled(_ context.Context, _ *session, p projectParams) (toolsEnabledResult, error) {
	enabled, err := s.svc.Settings.ToolsEnabled(string(p.ProjectPath))
	return toolsEnabledResult{Enabled: enabled}, err
}
