package wire

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
)

// Handler takes a connection's messages, one at a time, in the order they
// were read, in the connection's read loop: what it does not hand to
// Conn.Go holds up the next message.
type Handler interface {
	Handle(ctx context.Context, req *jsonrpc2.Request)
}

// Conn is one connection: a jsonrpc2.Conn on a stream, with what it lacks
// (see the package doc). Make it with NewConn, then Start it.
type Conn struct {
	stream jsonrpc2.ObjectStream
	log    zerolog.Logger
	// conn is set by the first message's dispatch, or when Start's
	// jsonrpc2.NewConn returns, whichever comes first: NewConn starts
	// reading before it returns the connection.
	conn atomic.Pointer[jsonrpc2.Conn]
	// results writes successful replies when the stream can (*Stream
	// does); else they go through the connection.
	results resultWriter
	running *admission // the calls running
	calls   *inflight  // the requests running, for Cancel
}

// NewConn returns a connection on stream that reads nothing until Start.
func NewConn(stream jsonrpc2.ObjectStream, log zerolog.Logger) *Conn {
	c := &Conn{stream: stream, log: log, running: newAdmission(defaultCallLimits), calls: newInflight()}
	c.results, _ = stream.(resultWriter)
	return c
}

// Start reads messages and hands them to h until the connection closes
// or ctx ends.
func (c *Conn) Start(ctx context.Context, h Handler) {
	conn := jsonrpc2.NewConn(ctx, c.stream, dispatcher{c, h}, jsonrpc2.SetLogger(printfLogger{c.log}))
	c.conn.Store(conn)
}

// dispatcher makes the connection known before its first message is
// handled.
type dispatcher struct {
	c *Conn
	h Handler
}

func (d dispatcher) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	d.c.conn.Store(conn)
	d.h.Handle(ctx, req)
}

// Wait returns once the connection is over: closed by the client or by
// Close, or by the stream itself (a client that stopped reading, framing
// that was lost; the log says why), or when ctx ends, which closes it.
func (c *Conn) Wait(ctx context.Context) {
	conn := c.conn.Load()
	ending, _ := c.stream.(endingStream)
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
		c.log.Warn().Err(ending.endReason()).Msg("closed the connection")
	}
}

// endingStream is a stream that can end its connection itself (*Stream
// does): a client that stopped reading, or framing that was lost.
type endingStream interface {
	ended() <-chan struct{}
	endReason() error
}

// Close closes the connection: the requests read after it are never
// answered.
func (c *Conn) Close() error { return c.conn.Load().Close() }

// Notify sends a notification.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Load().Notify(ctx, method, params)
}

// Go runs f, the handling of req up to its reply, in its own goroutine
// once the calls running leave room for it (callLimits), unless the
// connection (ctx) ends first: then f never runs, and Go says so. It is
// called from the read loop, which it holds up meanwhile.
func (c *Conn) Go(ctx context.Context, req *jsonrpc2.Request, f func()) bool {
	var size int64
	if req.Params != nil {
		size = int64(len(*req.Params))
	}
	if !c.running.enter(ctx, size) {
		return false
	}
	go func() {
		defer c.running.leave(size)
		f()
	}()
	return true
}

// Reply answers the request id: with e when it is not nil, its message
// Bounded; else with result, as one frame marshalled once when the stream
// can (reply.go). The error is one worth logging: a connection that is
// over is not.
func (c *Conn) Reply(ctx context.Context, id jsonrpc2.ID, result any, e *jsonrpc2.Error) error {
	conn := c.conn.Load()
	var err error
	switch {
	case e != nil:
		err = conn.ReplyWithError(ctx, id, Bounded(e))
	case c.results != nil:
		err = c.results.writeResult(id, result)
	default:
		err = conn.Reply(ctx, id, result)
	}
	if err == jsonrpc2.ErrClosed || errors.Is(err, errOutboxEnded) {
		return nil
	}
	return err
}

// printfLogger routes jsonrpc2's own messages to the log.
type printfLogger struct{ log zerolog.Logger }

func (l printfLogger) Printf(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
