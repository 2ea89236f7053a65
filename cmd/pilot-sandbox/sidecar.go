package main

import (
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
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

// sidecarServices is what the protocol serves: the manager for the
// sandboxes, their files and settings, served for the ports, set for the
// agent tools, and net for the permission questions and network policy.
func sidecarServices(m *service.Manager, served ports.Serving, set rpc.Tools, net *network) rpc.Services {
	return rpc.Services{
		Permissions:   net,
		NetworkPolicy: net,
		Lifecycle:     m,
		Exec:          m,
		Files:         m,
		Ports:         served,
		Browser:       m,
		Screen:        m,
		Settings:      m,
		ToolAccess:    m,
		Tools:         set,
		Events:        m,
	}
}

// watchDesktops closes the carried desktop ports of m's sandboxes without a
// network as they stop, in a process that serves no sandbox ports (mcp);
// stop ends the watch and closes them all.
func watchDesktops(m *service.Manager) (stop func()) {
	relay, ok := m.DesktopPorts().(*ports.DesktopRelay)
	if !ok {
		return func() {}
	}
	events, unsubscribe := m.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		relay.Watch(events)
	}()
	return func() { unsubscribe(); <-done }
}

// carryForwards carries, in a process that serves one project (mcp), that
// project's forwarded ports: the user's own choice, kept in their state,
// so the sandbox reaches their dev server however it was started. They
// are applied as its sandbox is seen running and end as it stops; nothing
// there adds or removes one. stop ends the watch and closes them all.
func carryForwards(m *service.Manager, project string, log zerolog.Logger) (stop func()) {
	f := ports.NewForwarder(m, projectfs.NewForwards(m.StateDir()), log)
	events, unsubscribe := m.Subscribe()
	mine := make(chan service.Event, 64)
	go func() {
		defer close(mine)
		for ev := range events {
			if ev.Project == project {
				mine <- ev
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Watch(mine)
	}()
	return func() { unsubscribe(); <-done }
}
