package rpc

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
)

// The lifecycle policy's part of the protocol (PROTOCOL.md, Lifecycle
// policy): sandbox/remove by a project that is gone or by container, and
// requests that wait for the sidecar's first look at Docker.

// removeParams name the sandbox to delete, one way or the other.
type removeParams struct {
	ProjectPath args.Path `json:"projectPath,omitempty" jsonschema:"The project's directory, which may have been deleted since; or give containerId."`
	ContainerID string    `json:"containerId,omitempty" jsonschema:"The sandbox's container ID (or name), instead of projectPath: for a sandbox whose project is gone or was moved."`
}

// maxContainerRef bounds containerId: an ID is 64 hex digits, a name
// rarely a quarter of this.
const maxContainerRef = 256

// TuneSchema bounds containerId.
func (removeParams) TuneSchema(s *jsonschema.Schema) {
	c := s.Properties["containerId"]
	c.MinLength, c.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxContainerRef)
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
		removed, err = s.svc.RemoveContainer(ctx, p.ContainerID)
	case p.ProjectPath != "":
		removed, err = s.svc.Remove(ctx, string(p.ProjectPath))
	default:
		err = &args.Error{Field: "projectPath", Reason: "is required, or containerId"}
	}
	return removeResult{Removed: removed}, err
}

// reconcileWait bounds the wait for the first reconciliation: an engine
// that answers slowly must not hold every request for good. Past it, a
// request answers with what is known. (A variable for the test of it.)
var reconcileWait = 15 * time.Second

// afterReconcile marks a method whose answer depends on the sandboxes the
// sidecar finds at startup (a status right after initialize must not say
// null for a sandbox that runs): it waits until the connection's
// Reconciled channel is closed, at most reconcileWait. Its params are
// checked first, so bad ones are answered at once.
func (s *Server) afterReconcile(m method) method {
	run := m.run
	m.run = func(ctx context.Context, sess *session, p any) (any, error) {
		s.awaitReconciled(ctx, sess.opts.Reconciled)
		return run(ctx, sess, p)
	}
	return m
}

func (s *Server) awaitReconciled(ctx context.Context, reconciled <-chan struct{}) {
	if reconciled == nil {
		return
	}
	timer := time.NewTimer(reconcileWait)
	defer timer.Stop()
	select {
	case <-reconciled:
	case <-ctx.Done():
	case <-timer.C:
		s.log.Warn().Dur("waited", reconcileWait).Msg("answering before the first reconciliation with Docker is done")
	}
}
