package main

import (
	"github.com/pilot-sandbox/pilot-sandbox/ports"
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
