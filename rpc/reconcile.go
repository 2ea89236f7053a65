package rpc

import (
	"context"
	"time"
)

// Requests that wait for the sidecar's first look at Docker (docs/protocol.md,
// Lifecycle policy): a method of the table is marked so with
// afterReconcile.

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
