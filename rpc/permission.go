package rpc

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/permission"
)

// Permissions is what the sandbox/permission methods serve, and the
// questions every connection hears (docs/protocol.md, "Permission
// requests"): the permission broker of the process, with project paths
// made canonical (cmd/pilot-sandbox's network).
type Permissions interface {
	// Listen hears the questions of every project ("") until stop.
	Listen(project string, fn func(permission.Event)) (stop func())
	Answer(id string, a permission.Answer) error
	List(project string) ([]permission.Question, []permission.Rule, error)
	Forget(project, rule string) (int, error)
}

// Params and results of sandbox/permission/*.
type (
	permissionAnswerParams struct {
		ID       string `json:"id" jsonschema:"The question's id, as sandbox/permission gave it."`
		Decision string `json:"decision" jsonschema:"allow_once (this time), allow_session (until the sandbox stops), allow_always (kept for the project in the user's state), or deny."`
		Reason   string `json:"reason,omitempty" jsonschema:"Why, in the user's words: the agent is told."`
		Always   bool   `json:"always,omitempty" jsonschema:"With deny: keep the deny for the project, as allow_always keeps an allow."`
	}
	permissionForgetParams struct {
		projectParams
		Rule string `json:"rule" jsonschema:"The kept decision's rule, as sandbox/permission/list gives it (example.org:443)."`
	}
	permissionListResult struct {
		Pending []permission.Question `json:"pending"`
		Rules   []permission.Rule     `json:"rules"`
	}
	permissionForgetResult struct {
		Forgotten int `json:"forgotten"`
	}
	emptyResult struct{}
)

// TuneSchema bounds the id and the reason, and names the decisions.
func (permissionAnswerParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["id"].MinLength, s.Properties["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(100)
	s.Properties["decision"].Enum = []any{permission.AllowOnce, permission.AllowSession, permission.AllowAlways, permission.Deny}
	s.Properties["reason"].MaxLength = jsonschema.Ptr(1000)
}

// TuneSchema bounds the rule.
func (permissionForgetParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["rule"].MinLength, s.Properties["rule"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(300)
}

func (s *Server) answerPermission(_ context.Context, _ *session, p permissionAnswerParams) (emptyResult, error) {
	return emptyResult{}, s.svc.Permissions.Answer(p.ID, permission.Answer{Decision: p.Decision, Reason: p.Reason, Always: p.Always})
}

func (s *Server) listPermissions(_ context.Context, _ *session, p projectParams) (permissionListResult, error) {
	pending, rules, err := s.svc.Permissions.List(string(p.ProjectPath))
	if pending == nil {
		pending = []permission.Question{}
	}
	if rules == nil {
		rules = []permission.Rule{}
	}
	return permissionListResult{Pending: pending, Rules: rules}, err
}

func (s *Server) forgetPermission(_ context.Context, _ *session, p permissionForgetParams) (permissionForgetResult, error) {
	n, err := s.svc.Permissions.Forget(string(p.ProjectPath), p.Rule)
	return permissionForgetResult{Forgotten: n}, err
}

// permissionNotice is a question event as the client hears it:
// sandbox/permission when asked, sandbox/permission/resolved when it ends.
func permissionNotice(e permission.Event) (notice, bool) {
	switch {
	case e.Asked != nil:
		return notice{"sandbox/permission", e.Asked}, true
	case e.Resolved != nil:
		return notice{"sandbox/permission/resolved", e.Resolved}, true
	}
	return notice{}, false
}
