package rpc

import (
	"context"
	"errors"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Ports is what the sandbox/ports methods serve; ports.Serving is one.
type Ports interface {
	ExposePort(ctx context.Context, project string, port int) (ports.Exposed, error)
	ExposedPorts(project string) []ports.Exposed
	ListeningPorts(ctx context.Context, project string) ([]ports.Listening, error)
	ClosePort(project string, port int) (bool, error)
	ForwardPort(ctx context.Context, project string, port, hostPort int) (ports.Forwarded, error)
	ForwardedPorts(project string) ([]ports.Forwarded, error)
	CloseForward(project string, port int) (bool, error)
}

// Directions of a port, as sandbox/ports/close names them.
const (
	directionForwarded = "forwarded"
	directionExposed   = "exposed"
)

// Params and results of sandbox/ports/* (docs/protocol.md, Ports).
type (
	portParams struct {
		projectParams
		Port int `json:"port" jsonschema:"A TCP port in the sandbox."`
	}
	portForwardParams struct {
		projectParams
		Port     int `json:"port" jsonschema:"The port that localhost answers on in the sandbox."`
		HostPort int `json:"hostPort,omitzero" jsonschema:"The port of the host's 127.0.0.1 it reaches (the same number when left out)."`
	}
	portCloseParams struct {
		projectParams
		Port      int    `json:"port" jsonschema:"The port in the sandbox."`
		Direction string `json:"direction" jsonschema:"exposed (a sandbox port answering on the host) or forwarded (a host port reached from the sandbox)."`
	}
	portsListParams struct {
		projectParams
		SkipListening bool `json:"skipListening,omitempty" jsonschema:"Leave out what listens in the sandbox (read by a command there, which can take seconds under load): listening comes back empty, the rest at once."`
	}
	portsListResult struct {
		Forwarded []ports.Forwarded `json:"forwarded"`
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

// TuneSchema bounds the ports.
func (portForwardParams) TuneSchema(s *jsonschema.Schema) {
	portBounds(s.Properties["port"])
	portBounds(s.Properties["hostPort"])
}

// TuneSchema bounds the port and names the directions.
func (portCloseParams) TuneSchema(s *jsonschema.Schema) {
	portBounds(s.Properties["port"])
	s.Properties["direction"].Enum = []any{directionForwarded, directionExposed}
}

func (s *Server) exposePort(ctx context.Context, _ *session, p portParams) (ports.Exposed, error) {
	return s.svc.Ports.ExposePort(ctx, string(p.ProjectPath), p.Port)
}

func (s *Server) forwardPort(ctx context.Context, _ *session, p portForwardParams) (ports.Forwarded, error) {
	return s.svc.Ports.ForwardPort(ctx, string(p.ProjectPath), p.Port, p.HostPort)
}

func (s *Server) listPorts(ctx context.Context, _ *session, p portsListParams) (portsListResult, error) {
	listening := []ports.Listening{}
	var err error
	if !p.SkipListening {
		listening, err = s.svc.Ports.ListeningPorts(ctx, string(p.ProjectPath))
	}
	switch {
	case errors.Is(err, service.ErrNotRunning):
		// Stopped, or not made yet: nothing listens and nothing is
		// exposed, and the forwards are kept for the next start.
		listening = []ports.Listening{}
	case err != nil:
		return portsListResult{}, err
	}
	forwarded, err := s.svc.Ports.ForwardedPorts(string(p.ProjectPath))
	if err != nil {
		return portsListResult{}, err
	}
	return portsListResult{
		Forwarded: forwarded,
		Exposed:   s.svc.Ports.ExposedPorts(string(p.ProjectPath)),
		Listening: listening,
	}, nil
}

// closePort closes an exposed or a forwarded port.
func (s *Server) closePort(_ context.Context, _ *session, p portCloseParams) (portCloseResult, error) {
	var closed bool
	var err error
	if p.Direction == directionForwarded {
		closed, err = s.svc.Ports.CloseForward(string(p.ProjectPath), p.Port)
	} else {
		closed, err = s.svc.Ports.ClosePort(string(p.ProjectPath), p.Port)
	}
	return portCloseResult{Closed: closed}, err
}
