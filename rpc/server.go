// Package rpc serves the sidecar's JSON-RPC 2.0 protocol (PROTOCOL.md) over
// any jsonrpc2.ObjectStream: stdio with LSP or NDJSON framing, WebSocket, or
// an in-memory pipe in tests. Handlers decode params, call the service and
// return; what an error means to a client is decided once, in toWire.
package rpc

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// ProtocolVersion is the version of PROTOCOL.md this server speaks.
const ProtocolVersion = 1

// Service is what the server needs of the domain; *service.Manager is one.
type Service interface {
	DockerStatus(ctx context.Context) service.DockerStatus
	Start(ctx context.Context, project string) (service.State, error)
	Stop(ctx context.Context, project string) (service.State, error)
	Remove(ctx context.Context, project string) (bool, error)
	Status(ctx context.Context, project string) (*service.State, error)
	List(ctx context.Context) ([]service.State, error)
	Close(ctx context.Context, project string) (*service.State, error)
	Exec(ctx context.Context, project string, req service.ExecRequest) (service.ExecOutput, error)
	Screenshot(ctx context.Context, project string) (service.Screenshot, error)
	ToolsEnabled(project string) (bool, error)
	SetToolsEnabled(project string, enabled bool) (bool, error)
	Subscribe() (<-chan service.Event, func())
}

// Info names the server in initialize's answer.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Server answers JSON-RPC requests on any number of connections.
type Server struct {
	svc     Service
	info    Info
	log     zerolog.Logger
	methods map[string]method
}

// NewServer returns a server for svc.
func NewServer(svc Service, info Info, log zerolog.Logger) *Server {
	s := &Server{svc: svc, info: info, log: log}
	s.methods = s.methodTable()
	return s
}

// ConnOptions are per-connection choices of the transport.
type ConnOptions struct {
	// OnExit is called for the exit notification with the exit code the
	// protocol asks for (0 after shutdown, 1 otherwise). The stdio transport
	// exits the process; nil closes just this connection.
	OnExit func(code int)
}

// session is one connection's protocol state.
type session struct {
	conn     *jsonrpc2.Conn
	shutdown atomic.Bool
	opts     ConnOptions
}

// Serve runs the protocol on stream until the connection closes: at the end
// of input (after every request read has been answered), on exit, or when
// ctx ends. Sandbox events are sent to the client as notifications meanwhile.
func (s *Server) Serve(ctx context.Context, stream jsonrpc2.ObjectStream, opts ConnOptions) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess := &session{opts: opts}
	events, unsubscribe := s.svc.Subscribe()
	defer unsubscribe()
	sess.conn = jsonrpc2.NewConn(ctx, stream, handler{s, sess}, jsonrpc2.SetLogger(printfLogger{s.log}))
	var wg sync.WaitGroup
	wg.Go(func() { s.forward(ctx, sess.conn, events) })
	select {
	case <-sess.conn.DisconnectNotify():
	case <-ctx.Done():
		sess.conn.Close()
	}
	cancel()
	wg.Wait()
}

// forward sends the service's events as notifications until ctx ends.
func (s *Server) forward(ctx context.Context, conn *jsonrpc2.Conn, events <-chan service.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			method, params := notification(ev)
			if err := conn.Notify(ctx, method, params); err != nil {
				return
			}
		}
	}
}

func notification(ev service.Event) (string, any) {
	if ev.Kind == service.EventProgress {
		return "sandbox/progress", ev.Progress
	}
	return "sandbox/event", struct {
		ProjectPath string         `json:"projectPath"`
		State       *service.State `json:"state"`
	}{ev.Project, ev.State}
}

// handler dispatches requests. Control methods (initialize, shutdown, exit)
// run in the read loop, so that they take effect in the order the client
// sent them; everything else runs in its own goroutine, so a long start does
// not hold up a status call.
type handler struct {
	s    *Server
	sess *session
}

func (h handler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	m, ok := h.s.methods[req.Method]
	switch {
	case h.sess.shutdown.Load() && req.Method != "exit":
		h.reply(ctx, req, nil, newError(codeInvalidRequest, "the server is shut down: only exit is accepted", nil))
	case !ok:
		if req.Notif {
			return // unknown notifications are ignored, as LSP and MCP do
		}
		h.reply(ctx, req, nil, newError(codeMethodNotFound, "method not found: "+req.Method, nil))
	case m.inline:
		h.call(ctx, req, m)
	default:
		go h.call(ctx, req, m)
	}
}

func (h handler) call(ctx context.Context, req *jsonrpc2.Request, m method) {
	started := time.Now()
	result, err := m.call(ctx, h.sess, req.Params)
	if err != nil {
		wire := toWire(err)
		ev := h.s.log.Info()
		if wire.Code == codeInternal {
			ev = h.s.log.Error()
		}
		ev.Str("method", req.Method).Int64("code", wire.Code).Err(err).Dur("took", time.Since(started)).Msg("request failed")
		h.reply(ctx, req, nil, wire)
		return
	}
	h.s.log.Debug().Str("method", req.Method).Dur("took", time.Since(started)).Msg("request")
	h.reply(ctx, req, result, nil)
}

func (h handler) reply(ctx context.Context, req *jsonrpc2.Request, result any, wire *jsonrpc2.Error) {
	if req.Notif {
		return
	}
	var err error
	if wire != nil {
		err = h.sess.conn.ReplyWithError(ctx, req.ID, wire)
	} else {
		err = h.sess.conn.Reply(ctx, req.ID, result)
	}
	if err != nil && err != jsonrpc2.ErrClosed {
		h.s.log.Warn().Err(err).Str("method", req.Method).Msg("could not send the reply")
	}
}

// printfLogger routes jsonrpc2's own messages to the log.
type printfLogger struct{ log zerolog.Logger }

func (l printfLogger) Printf(format string, v ...any) { l.log.Debug().Msgf(format, v...) }

// rawParams is what a method gets before decoding.
type rawParams = *json.RawMessage
