package rpc

import (
	"context"

	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Events is what every connection forwards to its client: Subscribe
// returns the sandboxes' events published from then on, and the function
// that ends the subscription. *service.Manager is one.
type Events interface {
	Subscribe() (<-chan service.Event, func())
}

// notice is a notification ready to send.
type notice struct {
	method string
	params any
}

// maxNotices bounds the notifications of questions and watched logs a
// connection holds for its forwarder; past it (a client that does not
// read, a flood of connections in a watched sandbox) they are dropped, and
// the log says so: sandbox/permission/list and sandbox/network/log have
// them all.
const maxNotices = 256

// forward sends the service's events and the session's notices as
// notifications, in the order they were published, until ctx ends. A
// flush request makes it send every one already published before it
// answers, so that a reply can follow the notifications its call caused.
func (s *Server) forward(ctx context.Context, conn *wire.Conn, events <-chan service.Event, notices <-chan notice, flushes <-chan chan struct{}) {
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
		case n := <-notices:
			if conn.Notify(ctx, n.method, n.params) != nil {
				return
			}
		case done := <-flushes:
			ok := drain(ctx, conn, events, notices, send)
			close(done)
			if !ok {
				return
			}
		}
	}
}

// drain sends every event and notice already published; false says the
// connection is over.
func drain(ctx context.Context, conn *wire.Conn, events <-chan service.Event, notices <-chan notice, send func(service.Event) bool) bool {
	for {
		select {
		case ev, ok := <-events:
			if !ok || !send(ev) {
				return false
			}
		case n := <-notices:
			if conn.Notify(ctx, n.method, n.params) != nil {
				return false
			}
		default:
			return true
		}
	}
}

// notify queues a notice for the forwarder without waiting: it is called
// from the permission broker's and the log's goroutines, which must not be
// held up by a client.
func (sess *session) notify(n notice) {
	select {
	case sess.notices <- n:
	default:
		sess.log.Warn().Str("method", n.method).Msg("a notification was dropped: the client is not reading")
	}
}

// listenPermissions makes the connection hear every project's questions;
// it returns the end of that.
func (s *Server) listenPermissions(sess *session) (stop func()) {
	if s.svc.Permissions == nil {
		return func() {}
	}
	return s.svc.Permissions.Listen("", func(e permission.Event) {
		if n, ok := permissionNotice(e); ok {
			sess.notify(n)
		}
	})
}

// stopNotices ends what the session hears: the questions (stop) and the
// watched logs.
func (sess *session) stopNotices(stop func()) {
	stop()
	sess.watchMu.Lock()
	defer sess.watchMu.Unlock()
	for project, end := range sess.watched {
		end()
		delete(sess.watched, project)
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
