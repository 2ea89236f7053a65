package rpc

import (
	"context"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// The session's methods: initialize, shutdown and exit (docs/protocol.md,
// Methods). $/cancelRequest is in cancel.go, rpc.discover in openrpc.go.

type (
	initializeParams struct {
		ClientInfo *Info `json:"clientInfo,omitempty" jsonschema:"The client's name and version, for the log."`
	}
	initializeResult struct {
		ServerInfo      Info                 `json:"serverInfo"`
		ProtocolVersion int                  `json:"protocolVersion"`
		Docker          service.DockerStatus `json:"docker"`
	}
)

func (s *Server) initialize(ctx context.Context, _ *session, p initializeParams) (initializeResult, error) {
	if p.ClientInfo != nil {
		s.log.Info().Str("client", p.ClientInfo.Name).Str("clientVersion", p.ClientInfo.Version).Msg("client connected")
	}
	return initializeResult{ServerInfo: s.info, ProtocolVersion: ProtocolVersion, Docker: s.svc.Lifecycle.DockerStatus(ctx)}, nil
}

func (s *Server) shutdown(_ context.Context, sess *session, _ noParams) (*struct{}, error) {
	sess.shutdown.Store(true)
	return nil, nil
}

func (s *Server) exit(_ context.Context, sess *session, _ noParams) (*struct{}, error) {
	code := 1
	if sess.shutdown.Load() {
		code = 0
	}
	s.log.Info().Int("code", code).Msg("exit requested")
	sess.exited.Store(true)
	if sess.opts.OnExit != nil {
		sess.opts.OnExit(code)
	}
	// Whatever the transport does, this connection is over: the requests
	// read after exit will never be answered, so nothing may wait for them.
	sess.conn.Close()
	return nil, nil
}
