package rpc

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
)

// ProtocolVersion is the version of the protocol (docs/protocol.md) this
// server speaks.
const ProtocolVersion = 1

// Services are what the handler groups need, a slice each, declared in
// the group's file (lifecycle.go, exec.go, files.go, ports.go, browser.go,
// screen.go, settings.go, tools.go) and, for the events every connection
// forwards, in events.go. One value may serve several: cmd/pilot-sandbox
// gives the manager for most, and the ports from the value that carries
// them. A test may leave out the slices it never calls.
type Services struct {
	Lifecycle  Lifecycle
	Exec       Exec
	Files      Files
	Ports      Ports
	Browser    Browser
	Screen     Screen
	Settings   Settings
	ToolAccess ToolAccess
	Tools      Tools
	Events     Events
	// Permissions and NetworkPolicy serve the permission requests and the
	// network policy (permission.go, network.go); without Permissions a
	// connection hears no questions.
	Permissions   Permissions
	NetworkPolicy NetworkPolicy
	// Tasks serves the workspace and the tasks (tasks.go); without it a
	// connection hears no task events.
	Tasks Tasks
	// Recordings serves sandbox/recording/* (recording.go).
	Recordings Recordings
	// Activity serves the timelines (activity.go); without it nothing is
	// recorded and a connection hears no entries.
	Activity Activity
	// Control serves the control handover (control.go); without it the
	// agent always holds the desktops.
	Control Control
}

// Info names the server in initialize's answer.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Server answers JSON-RPC requests on any number of connections.
type Server struct {
	svc     Services
	info    Info
	log     zerolog.Logger
	table   []method          // the method table, in order
	methods map[string]method // the same, by name
}

// NewServer returns a server of svc's methods.
func NewServer(svc Services, info Info, log zerolog.Logger) *Server {
	s := &Server{svc: svc, info: info, log: log}
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
	conn     *wire.Conn
	shutdown atomic.Bool
	exited   atomic.Bool // after exit, nothing more is handled
	opts     ConnOptions
	// flushes asks the forwarder to send every event published so far;
	// forwarded is closed when the forwarder stops.
	flushes   chan chan struct{}
	forwarded chan struct{}
	// sandboxCalls bounds the calls running on each sandbox (busy.go).
	sandboxCalls sandboxCalls

	// notices are the notifications of the permission questions and the
	// watched network logs, which the forwarder sends with the events.
	notices chan notice

	watchMu sync.Mutex        // guards watched
	watched map[string]func() // the projects whose log this connection watches, and the end of each watch
	held    held              // the desktops this connection's user took (control.go)
	log     zerolog.Logger
}

// Serve runs the protocol on stream until the connection closes: at the end
// of input (after every request read has been answered), on exit, or when
// ctx ends. Sandbox events are sent to the client as notifications meanwhile.
func (s *Server) Serve(ctx context.Context, stream jsonrpc2.ObjectStream, opts ConnOptions) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess := &session{
		conn:      wire.NewConn(stream, s.log),
		opts:      opts,
		flushes:   make(chan chan struct{}),
		forwarded: make(chan struct{}),
		notices:   make(chan notice, maxNotices),
		watched:   map[string]func(){},
		log:       s.log,
	}
	events, unsubscribe := s.svc.Events.Subscribe()
	defer unsubscribe()
	defer sess.stopNotices(s.listenPermissions(sess))
	defer s.listenTasks(sess)()
	defer s.listenActivity(sess)()
	defer s.listenControl(sess)()
	if opts.OnSubscribed != nil {
		opts.OnSubscribed()
	}
	sess.conn.Start(ctx, handler{s, sess})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(sess.forwarded)
		s.forward(ctx, sess.conn, events, sess.notices, sess.flushes)
	})
	defer s.holdControl(ctx, sess)()
	sess.conn.Wait(ctx)
	cancel()
	wg.Wait()
}
