package rpc

import (
	"context"

	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Events is what every connection forwards to its client: Subscribe
// returns the sandboxes' events published from then on, and the function
// that ends the subscription. *service.Manager is one.
type Events interface {
	Subscribe() (<-chan service.Event, func())
}

// forward sends the service's events as notifications, in the order they
// were published, until ctx ends. A flush request makes it send every event
// already published before it answers, so that a reply can follow the
// events its call caused.
func (s *Server) forward(ctx context.Context, conn *wire.Conn, events <-chan service.Event, flushes <-chan chan struct{}) {
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
