package rpc

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/ports"
)

// Ports is what the sandbox/ports methods serve; *ports.Exposer is one.
type Ports interface {
	ExposePort(ctx context.Context, project string, port int) (ports.Exposed, error)
	ExposedPorts(project string) []ports.Exposed
	ListeningPorts(ctx context.Context, project string) ([]ports.Listening, error)
	ClosePort(project string, port int) (bool, error)
}

// Directions of a port, as sandbox/ports/close names them.
const (
	directionForwarded = "forwarded"
	directionExposed   = "exposed"
)

// Params and results of sandbox/ports/* (PROTOCOL.md, Ports).
type (
	portParams struct {
		projectParams
		Port int `json:"port" jsonschema:"A TCP port in the sandbox."`
	}
	portCloseParams struct {
		projectParams
		Port      int    `json:"port" jsonschema:"The port in the sandbox."`
		Direction string `json:"direction" jsonschema:"exposed (a sandbox port answering on the host) or forwarded (a host port reached from the sandbox)."`
	}
	forwardedPort struct {
		Port     int `json:"port"`
		HostPort int `json:"hostPort"`
	}
	portsListResult struct {
		Forwarded []forwardedPort   `json:"forwarded"`
		Exposed   []ports.Exposed   `json:"exposed"`
		Listening []ports.Listening `json:"listening"`
	}
	portCloseResult struct {
		Closed bool `json:"closed"`
	}
)

func portBounds(s *jsonschema.Schema) {
	s.Minimum, s.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(65535.0)
}

// TuneSchema bounds the port.
func (portParams) TuneSchema(s *jsonschema.Schema) { portBounds(s.Properties["port"]) }

// TuneSchema bounds the port and names the directions.
func (portCloseParams) TuneSchema(s *jsonschema.Schema) {
	portBounds(s.Properties["port"])
	s.Properties["direction"].Enum = []any{directionForwarded, directionExposed}
}

func (s *Server) exposePort(ctx context.Context, _ *session, p portParams) (ports.Exposed, error) {
	return s.svc.ExposePort(ctx, string(p.ProjectPath), p.Port)
}

func (s *Server) listPorts(ctx context.Context, _ *session, p projectParams) (portsListResult, error) {
	listening, err := s.svc.ListeningPorts(ctx, string(p.ProjectPath))
	if err != nil {
		return portsListResult{}, err
	}
	return portsListResult{
		Forwarded: []forwardedPort{},
		Exposed:   s.svc.ExposedPorts(string(p.ProjectPath)),
		Listening: listening,
	}, nil
}

// closePort closes an exposed port; this sidecar forwards none, so a
// forwarded one is never there to close.
func (s *Server) closePort(_ context.Context, _ *session, p portCloseParams) (portCloseResult, error) {
	if p.Direction == directionForwarded {
		return portCloseResult{Closed: false}, nil
	}
	closed, err := s.svc.ClosePort(string(p.ProjectPath), p.Port)
	return portCloseResult{Closed: closed}, err
}
