package main

import (
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// newSidecarService returns what the protocol serves for m: the manager
// and the sandbox ports this process exposes on the host. The exposed
// ports of a sandbox close when it stops; stop closes them all, and every
// sandbox's DevTools relay (sandbox/browser).
func newSidecarService(m *service.Manager, log zerolog.Logger) (svc ports.Serving, stop func()) {
	svc = ports.Serve(m, log)
	events, unsubscribe := m.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.Watch(events)
	}()
	return svc, func() { unsubscribe(); <-done; m.CloseRelays() }
}

// carryProjectPorts carries, for a process that serves one project (mcp),
// that project's forwarded ports (the user's own choice, kept in their
// state: the sandbox reaches their dev server however it was started) and
// its desktop's ports when it has no network, closing them as its sandbox
// stops. Nothing can expose or forward from there. stop ends the watch and
// closes them all.
func carryProjectPorts(m *service.Manager, project string, log zerolog.Logger) (stop func()) {
	svc := ports.Serve(m, log)
	events, unsubscribe := m.Subscribe()
	mine := make(chan service.Event, 64)
	done := make(chan struct{})
	go func() {
		defer close(mine)
		for ev := range events {
			if ev.Project == project {
				mine <- ev
			}
		}
	}()
	go func() {
		defer close(done)
		svc.Watch(mine)
	}()
	return func() { unsubscribe(); <-done }
}
