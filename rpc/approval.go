package rpc

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
)

// sandbox/approve records the user's approval of what a project's
// repository content asks (PROTOCOL.md, "Repository content needs the
// user's approval"); sandbox/start answers needs_approval until then.
type (
	approveParams struct {
		projectParams
		Digest string `json:"digest" jsonschema:"The digest of the request being approved, as data.approval.digest of a needs_approval error gave it."`
	}
	approveResult struct {
		Approved bool `json:"approved"`
	}
)

// TuneSchema bounds a digest: "sha256:" and 64 hex digits.
func (approveParams) TuneSchema(s *jsonschema.Schema) {
	d := s.Properties["digest"]
	d.MinLength, d.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(128)
}

func (s *Server) approve(ctx context.Context, _ *session, p approveParams) (approveResult, error) {
	if err := s.svc.Approve(ctx, string(p.ProjectPath), p.Digest); err != nil {
		return approveResult{}, err
	}
	return approveResult{Approved: true}, nil
}
