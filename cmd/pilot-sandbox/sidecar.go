package main

import (
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// newCarrier returns the carrier of every relay this process runs for a's
// sandboxes: their exposed and forwarded ports, the desktops of those
// without a network, their DevTools relays. With project set (mcp, which
// serves one project) it applies that project's forwarded ports only:
// the user's own choice, kept in their state, so the sandbox reaches their
// dev server however it was started. Close closes them all.
func newCarrier(a *app, project string) *ports.Carrier {
	return ports.NewCarrier(a.m, a.docker, ports.Options{Project: project, Desktops: a.desktops, Log: a.log})
}

// sidecarServices is what the protocol serves: the manager for the
// sandboxes, their files and settings, the carrier for the ports and the
// browser, set for the agent tools, and net for the permission questions
// and network policy.
func sidecarServices(m *service.Manager, relays *ports.Carrier, set rpc.Tools, net *network) rpc.Services {
	return rpc.Services{
		Permissions:   net,
		NetworkPolicy: net,
		Lifecycle:     m,
		Exec:          m,
		Files:         m,
		Ports:         relays,
		Browser:       relays,
		Screen:        m,
		Settings:      m,
		ToolAccess:    m,
		Tools:         set,
		Events:        m,
	}
}
