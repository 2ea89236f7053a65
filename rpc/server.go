// Package rpc serves the sidecar's JSON-RPC 2.0 protocol (PROTOCOL.md) over
// any jsonrpc2.ObjectStream: stdio with LSP or NDJSON framing, WebSocket, or
// an in-memory pipe in tests. Handlers decode params, call the service and
// return; what an error means to a client is decided once, in toWire.
package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// ProtocolVersion is the version of PROTOCOL.md this server speaks.
const ProtocolVersion = 1

// Service is what the server needs of the domain; *service.Manager is one.
type Service interface {
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
	Exec(ctx context.Context, project string, req service.ExecRequest) (service.ExecOutput, error)
	Background(ctx context.Context, project string, req service.ExecRequest) (service.BackgroundProcess, error)
	Processes(ctx context.Context, project string) ([]service.Process, error)
	Kill(ctx context.Context, project string, pid int) error
	Screenshot(ctx context.Context, project string) (desktop.Screenshot, error)
	ToolsEnabled(project string) (bool, error)
	SetToolsEnabled(project string, enabled bool) (bool, error)
	Subscribe() (<-chan service.Event, func())
	// Files is the project's sandbox's files, running or stopped.
	Files(ctx context.Context, project string) (*sandboxfs.FS, error)
	// Touch records a use of the project's sandbox (a tool call), for
	// the idle policy.
	Touch(project string)
}

// Tools is what tools/list and tools/call serve; *tools.Set is one.
type Tools interface {
	// List returns every agent tool.
	List() []tools.Tool
	// Call runs a tool for a project. Failures the model can correct come
	// back as a Result with IsError; an error is for an unknown tool or a
	// failure of the sidecar itself.
	Call(ctx context.Context, project, name string, arguments json.RawMessage) (tools.Result, error)
}

// Info names the server in initialize's answer.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Server answers JSON-RPC requests on any number of connections.
type Server struct {
	svc     Service
	relays  Relays
	tools   Tools
	info    Info
	log     zerolog.Logger
	table   []method          // the method table, in order
	methods map[string]method // the same, by name
}

// NewServer returns a server for svc, the relays of its sandboxes and
// its agent tools.
func NewServer(svc Service, relays Relays, tools Tools, info Info, log zerolog.Logger) *Server {
	s := &Server{svc: svc, relays: relays, tools: tools, info: info, log: log}
	s.table = s.methodTable()
	s.methods = make(map[string]method, len(s.table))
	for _, m := range s.table {
		s.methods[m.name] = m
	}
	return s
}

// ConnOptions are per-connection choices of the transport.
type ConnOptions struct {
	// OnExit is called for the exit notification with the exit code the
	// protocol asks for (0 after shutdown, 1 otherwise); the connection is
	// closed right after. The stdio transport exits the process; a
	// WebSocket connection leaves it nil.
	OnExit func(code int)
	// OnSubscribed, if set, is called once the connection receives the
	// service's events: the stdio transport starts the manager's startup
	// reconciliation then, so that none of what it finds is missed.
	OnSubscribed func()
	// Reconciled, if set, is closed once the service has first looked at
	// Docker (service.Manager.Reconciled): until then, the requests that
	// depend on it wait (afterReconcile).
	Reconciled <-chan struct{}
}

// session is one connection's protocol state.
type session struct {
	// conn is set by the first message's dispatch: jsonrpc2.NewConn starts
	// reading before it returns the connection to Serve.
	conn     atomic.Pointer[jsonrpc2.Conn]
	shutdown atomic.Bool
	exited   atomic.Bool // after exit, nothing more is handled
	opts     ConnOptions
	// results writes successful replies when the stream can (resultWriter);
	// else they go through the connection.
	results resultWriter
	// flushes asks the forwarder to send every event published so far;
	// forwarded is closed when the forwarder stops.
	flushes   chan chan struct{}
	forwarded chan struct{}

	running *admission // the calls running

	mu       sync.Mutex                    // guards inflight
	inflight map[jsonrpc2.ID]*inflightCall // requests running, for $/cancelRequest
}

// Serve runs the protocol on stream until the connection closes: at the end
// of input (after every request read has been answered), on exit, or when
// ctx ends. Sandbox events are sent to the client as notifications meanwhile.
func (s *Server) Serve(ctx context.Context, stream jsonrpc2.ObjectStream, opts ConnOptions) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess := &session{
		opts:      opts,
		flushes:   make(chan chan struct{}),
		forwarded: make(chan struct{}),
		running:   newAdmission(defaultCallLimits),
		inflight:  map[jsonrpc2.ID]*inflightCall{},
	}
	sess.results, _ = stream.(resultWriter)
	events, unsubscribe := s.svc.Subscribe()
	defer unsubscribe()
	if opts.OnSubscribed != nil {
		opts.OnSubscribed()
	}
	conn := jsonrpc2.NewConn(ctx, stream, handler{s, sess}, jsonrpc2.SetLogger(printfLogger{s.log}))
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(sess.forwarded)
		s.forward(ctx, conn, events, sess.flushes)
	})
	ending, _ := stream.(endingStream)
	var ended <-chan struct{}
	if ending != nil {
		ended = ending.ended()
	}
	select {
	case <-conn.DisconnectNotify():
	case <-ctx.Done():
		conn.Close()
	case <-ended:
		conn.Close()
	}
	if ending != nil && ending.endReason() != nil {
		s.log.Warn().Err(ending.endReason()).Msg("closed the connection")
	}
	cancel()
	wg.Wait()
}

// endingStream is a stream that can end its connection itself (*Stream
// does): a client that stopped reading, or framing that was lost.
type endingStream interface {
	ended() <-chan struct{}
	endReason() error
}

// forward sends the service's events as notifications, in the order they
// were published, until ctx ends. A flush request makes it send every event
// already published before it answers, so that a reply can follow the
// events its call caused.
func (s *Server) forward(ctx context.Context, conn *jsonrpc2.Conn, events <-chan service.Event, flushes <-chan chan struct{}) {
	send := func(ev service.Event) bool {
		method, params := eventNotification(ev)
		return conn.Notify(ctx, method, params) == nil
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok || !send(ev) {
				return
			}
		case done := <-flushes:
			for drained := false; !drained; {
				select {
				case ev, ok := <-events:
					if !ok || !send(ev) {
						close(done)
						return
					}
				default:
					drained = true
				}
			}
			close(done)
		}
	}
}

// flush waits until every event published so far has been sent.
func (sess *session) flush() {
	done := make(chan struct{})
	select {
	case sess.flushes <- done:
		<-done
	case <-sess.forwarded:
	}
}

// eventParams are the params of sandbox/event; state is null when the
// project has no sandbox any more.
type eventParams struct {
	ProjectPath string         `json:"projectPath"`
	State       *service.State `json:"state"`
}

func eventNotification(ev service.Event) (string, any) {
	switch ev.Kind {
	case service.EventProgress:
		return "sandbox/progress", ev.Progress
	case service.EventWarning:
		return "sandbox/warning", ev.Warning
	}
	return "sandbox/event", eventParams{ev.Project, ev.State}
}

// handler dispatches requests. The control methods that change the session
// (shutdown, exit, $/cancelRequest) take effect in the read loop, so in the
// order the client sent them; everything else runs in its own goroutine,
// with a context $/cancelRequest can cancel, so a long start does not hold
// up a status call. Replies are always sent from a goroutine, so that the
// read loop waits on a client that is not reading only through the
// bounds on what a connection holds (a full outbox, the calls running).
type handler struct {
	s    *Server
	sess *session
}

func (h handler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	h.sess.conn.Store(conn)
	m, ok := h.s.methods[req.Method]
	switch {
	case h.sess.exited.Load():
		// The connection is closing: a message that was already read
		// when exit took effect is dropped, not run.
	case h.sess.shutdown.Load() && req.Method != "exit":
		h.sess.spawn(ctx, req, func() {
			h.reply(ctx, req, nil, newError(codeInvalidRequest, "the server is shut down: only exit is accepted", nil))
		})
	case !ok:
		if req.Notif {
			return // unknown notifications are ignored, as LSP and MCP do
		}
		h.sess.spawn(ctx, req, func() { h.reply(ctx, req, nil, newError(codeMethodNotFound, "method not found: "+req.Method, nil)) })
	case m.inline:
		started := time.Now()
		result, err := h.call(ctx, m, req)
		if req.Notif { // exit, $/cancelRequest: nothing to send, no need to wait for room
			h.finish(ctx, req, started, result, err)
			return
		}
		h.sess.spawn(ctx, req, func() { h.finish(ctx, req, started, result, err) })
	default:
		callCtx, done := h.sess.begin(ctx, req)
		spawned := h.sess.spawn(ctx, req, func() {
			defer done()
			started := time.Now()
			result, err := h.call(callCtx, m, req)
			h.finish(callCtx, req, started, result, err)
		})
		if !spawned {
			done()
		}
	}
}

// spawn runs f, the handling of req up to its reply, in its own goroutine
// once the calls running leave room for it (callLimits), unless the connection (ctx) ends first: then f never
// runs. It is called from the read loop, which it holds up meanwhile.
func (sess *session) spawn(ctx context.Context, req *jsonrpc2.Request, f func()) bool {
	var size int64
	if req.Params != nil {
		size = int64(len(*req.Params))
	}
	if !sess.running.enter(ctx, size) {
		return false
	}
	go func() {
		defer sess.running.leave(size)
		f()
	}()
	return true
}

// call runs a method. A panic is a bug: it is logged with its stack and
// answered as an internal error, and the server goes on serving.
func (h handler) call(ctx context.Context, m method, req *jsonrpc2.Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.s.log.Error().Str("method", req.Method).Str("stack", string(debug.Stack())).Msgf("panic: %v", p)
			result, err = nil, fmt.Errorf("%s failed: %v", req.Method, p)
		}
	}()
	return m.call(ctx, h.sess, req.Params)
}

// finish logs the outcome of a call and answers it.
func (h handler) finish(ctx context.Context, req *jsonrpc2.Request, started time.Time, result any, err error) {
	if err != nil {
		wire := toWire(err)
		ev := h.s.log.Info()
		if wire.Code == codeInternal {
			ev = h.s.log.Error()
		}
		// The message says what err does, once: err.Error() may build a
		// long one again.
		ev.Str("method", req.Method).Int64("code", wire.Code).Str("error", truncate(wire.Message, maxErrorMessageBytes)).
			Dur("took", time.Since(started)).Msg("request failed")
		h.reply(ctx, req, nil, wire)
		return
	}
	h.s.log.Debug().Str("method", req.Method).Dur("took", time.Since(started)).Msg("request")
	h.reply(ctx, req, result, nil)
}

// maxErrorMessageBytes bounds an error's message in a reply and in the log:
// one that quotes what the client sent (a 30 MB projectPath made a 63 MB
// reply, and ten of them a 692 MB log) must not come back, or be logged,
// whole.
const maxErrorMessageBytes = 4 << 10

// boundMessage returns wire with its message cut to maxErrorMessageBytes.
func boundMessage(wire *jsonrpc2.Error) *jsonrpc2.Error {
	if len(wire.Message) <= maxErrorMessageBytes {
		return wire
	}
	cut := *wire // wire may be the caller's own error
	cut.Message = truncate(wire.Message, maxErrorMessageBytes)
	return &cut
}

func (h handler) reply(ctx context.Context, req *jsonrpc2.Request, result any, wire *jsonrpc2.Error) {
	if req.Notif {
		return
	}
	// The events the call caused (a start's progress and state changes) go
	// out before its reply.
	h.sess.flush()
	conn := h.sess.conn.Load()
	var err error
	switch {
	case wire != nil:
		err = conn.ReplyWithError(ctx, req.ID, boundMessage(wire))
	case h.sess.results != nil:
		err = h.sess.results.writeResult(req.ID, result)
	default:
		err = conn.Reply(ctx, req.ID, result)
	}
	if err != nil && err != jsonrpc2.ErrClosed && !errors.Is(err, errOutboxEnded) {
		h.s.log.Warn().Err(err).Str("method", req.Method).Msg("could not send the reply")
	}
}

// printfLogger routes jsonrpc2's own messages to the log.
type printfLogger struct{ log zerolog.Logger }

func (l printfLogger) Printf(format string, v ...any) { l.log.Debug().Msgf(format, v...) }

// rawParams is what a method gets before decoding.
type rawParams = *json.RawMessage
