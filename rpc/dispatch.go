package rpc

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
)

// handler dispatches requests. The control methods that change the session
// (shutdown, exit, $/cancelRequest) take effect in the read loop, so in the
// order the client sent them; everything else runs in its own goroutine
// (wire.Conn.Go), with a context $/cancelRequest can cancel, so a long
// start does not hold up a status call. Replies are always sent from a
// goroutine, so that the read loop waits on a client that is not reading
// only through the bounds on what a connection holds (a full outbox, the
// calls running).
type handler struct {
	s    *Server
	sess *session
}

func (h handler) Handle(ctx context.Context, req *jsonrpc2.Request) {
	conn := h.sess.conn
	m, ok := h.s.methods[req.Method]
	switch {
	case h.sess.exited.Load():
		// The connection is closing: a message that was already read
		// when exit took effect is dropped, not run.
	case h.sess.shutdown.Load() && req.Method != "exit":
		conn.Go(ctx, req, func() {
			h.reply(ctx, req, nil, newError(codeInvalidRequest, "the server is shut down: only exit is accepted", nil))
		})
	case !ok:
		if req.Notif {
			return // unknown notifications are ignored, as LSP and MCP do
		}
		conn.Go(ctx, req, func() { h.reply(ctx, req, nil, newError(codeMethodNotFound, "method not found: "+req.Method, nil)) })
	case m.inline:
		started := time.Now()
		result, err := h.call(ctx, m, req)
		if req.Notif { // exit, $/cancelRequest: nothing to send, no need to wait for room
			h.finish(ctx, req, started, result, err)
			return
		}
		conn.Go(ctx, req, func() { h.finish(ctx, req, started, result, err) })
	default:
		callCtx, done := conn.Begin(ctx, req)
		spawned := conn.Go(ctx, req, func() {
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
		// The message says what err does, once: err.Error() may build a
		// long one again.
		wireErr := wire.Bounded(toWire(err))
		ev := h.s.log.Info()
		if wireErr.Code == codeInternal {
			ev = h.s.log.Error()
		}
		ev.Str("method", req.Method).Int64("code", wireErr.Code).Str("error", wireErr.Message).
			Dur("took", time.Since(started)).Msg("request failed")
		h.reply(ctx, req, nil, wireErr)
		return
	}
	h.s.log.Debug().Str("method", req.Method).Dur("took", time.Since(started)).Msg("request")
	h.reply(ctx, req, result, nil)
}

func (h handler) reply(ctx context.Context, req *jsonrpc2.Request, result any, wireErr *jsonrpc2.Error) {
	if req.Notif {
		return
	}
	// The events the call caused (a start's progress and state changes) go
	// out before its reply.
	h.sess.flush()
	if err := h.sess.conn.Reply(ctx, req.ID, result, wireErr); err != nil {
		h.s.log.Warn().Err(err).Str("method", req.Method).Msg("could not send the reply")
	}
}
