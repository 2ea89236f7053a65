package rpc

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Lifecycle is what docker/status, sandbox/start, approve, stop, remove,
// status and list, and project/close need (docs/protocol.md, Methods);
// *service.Manager is one.
type Lifecycle interface {
	DockerStatus(ctx context.Context) service.DockerStatus
	Start(ctx context.Context, project string) (service.State, error)
	// Approve records the user's approval of what the project asks
	// (sandbox/approve).
	Approve(ctx context.Context, project, digest string) error
	Stop(ctx context.Context, project string) (service.State, error)
	Remove(ctx context.Context, project string) (bool, error)
	RemoveContainer(ctx context.Context, id string) (bool, error)
	Status(ctx context.Context, project string) (*service.State, error)
	List(ctx context.Context) ([]service.State, error)
	Close(ctx context.Context, project string) (*service.State, error)
	// Pause freezes the project's sandbox (sandbox/pause); CloseProject
	// does what config.json's closeAction says (sandbox/close).
	Pause(ctx context.Context, project string) (service.State, error)
	CloseProject(ctx context.Context, project string) (*service.State, error)
}

// Params and results of the lifecycle methods.
type (
	listResult struct {
		Sandboxes []service.State `json:"sandboxes"`
	}
	// removeParams name the sandbox to delete, one way or the other
	// (docs/protocol.md, Lifecycle policy: by a project that is gone, or by
	// container).
	removeParams struct {
		ProjectPath args.Path `json:"projectPath,omitempty" jsonschema:"The project's directory, which may have been deleted since; or give containerId."`
		ContainerID string    `json:"containerId,omitempty" jsonschema:"The sandbox's container ID (or name), instead of projectPath: for a sandbox whose project is gone or was moved."`
	}
	// approveParams: sandbox/approve records the user's approval of what a
	// project's repository content asks (docs/protocol.md, "Repository content
	// needs the user's approval"); sandbox/start answers needs_approval
	// until then.
	approveParams struct {
		projectParams
		Digest string `json:"digest" jsonschema:"The digest of the request being approved, as data.approval.digest of a needs_approval error gave it."`
	}
	approveResult struct {
		Approved bool `json:"approved"`
	}
)

// maxContainerRef bounds containerId: an ID is 64 hex digits, a name
// rarely a quarter of this.
const maxContainerRef = 256

// TuneSchema bounds containerId.
func (removeParams) TuneSchema(s *jsonschema.Schema) {
	c := s.Properties["containerId"]
	c.MinLength, c.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxContainerRef)
}

// TuneSchema bounds a digest: "sha256:" and 64 hex digits.
func (approveParams) TuneSchema(s *jsonschema.Schema) {
	d := s.Properties["digest"]
	d.MinLength, d.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(128)
}

func (s *Server) dockerStatus(ctx context.Context, _ *session, _ noParams) (service.DockerStatus, error) {
	return s.svc.Lifecycle.DockerStatus(ctx), nil
}

func (s *Server) start(ctx context.Context, _ *session, p projectParams) (service.State, error) {
	return s.svc.Lifecycle.Start(ctx, string(p.ProjectPath))
}

func (s *Server) approve(ctx context.Context, _ *session, p approveParams) (approveResult, error) {
	if err := s.svc.Lifecycle.Approve(ctx, string(p.ProjectPath), p.Digest); err != nil {
		return approveResult{}, err
	}
	return approveResult{Approved: true}, nil
}

func (s *Server) stop(ctx context.Context, _ *session, p projectParams) (service.State, error) {
	return s.svc.Lifecycle.Stop(ctx, string(p.ProjectPath))
}

func (s *Server) remove(ctx context.Context, _ *session, p removeParams) (removeResult, error) {
	var (
		removed bool
		err     error
	)
	switch {
	case p.ProjectPath != "" && p.ContainerID != "":
		err = &args.Error{Field: "containerId", Reason: "give projectPath or containerId, not both"}
	case p.ContainerID != "":
		removed, err = s.svc.Lifecycle.RemoveContainer(ctx, p.ContainerID)
	case p.ProjectPath != "":
		removed, err = s.svc.Lifecycle.Remove(ctx, string(p.ProjectPath))
	default:
		err = &args.Error{Field: "projectPath", Reason: "is required, or containerId"}
	}
	return removeResult{Removed: removed}, err
}

func (s *Server) status(ctx context.Context, _ *session, p projectParams) (*service.State, error) {
	return s.svc.Lifecycle.Status(ctx, string(p.ProjectPath))
}

func (s *Server) list(ctx context.Context, _ *session, _ noParams) (listResult, error) {
	states, err := s.svc.Lifecycle.List(ctx)
	if states == nil {
		states = []service.State{}
	}
	return listResult{Sandboxes: states}, err
}

func (s *Server) closeProject(ctx context.Context, _ *session, p projectParams) (*service.State, error) {
	return s.svc.Lifecycle.Close(ctx, string(p.ProjectPath))
}

func (s *Server) pause(ctx context.Context, _ *session, p projectParams) (service.State, error) {
	return s.svc.Lifecycle.Pause(ctx, string(p.ProjectPath))
}

func (s *Server) closeSandbox(ctx context.Context, _ *session, p projectParams) (*service.State, error) {
	return s.svc.Lifecycle.CloseProject(ctx, string(p.ProjectPath))
}
