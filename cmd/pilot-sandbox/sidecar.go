package main

import (
	"context"

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
	c := ports.NewCarrier(a.m, a.docker, ports.Options{Project: project, Desktops: a.desktops, Log: a.log})
	a.models.useCarrier(c) // it carries the model gateway into the tasks' sandboxes
	return c
}

// sidecarServices is what the protocol serves: the manager for the
// sandboxes, their files and settings, the carrier for the ports and the
// browser, set for the agent tools, net for the permission questions and
// network policy, the task manager for the workspace and the tasks, the
// recorder for the recordings, and the timeline for the activity and the
// control handover.
func sidecarServices(m *service.Manager, relays *ports.Carrier, set rpc.Tools, net *network, tasks rpc.Tasks, rec rpc.Recordings, tl *timeline) rpc.Services {
	return rpc.Services{
		Tasks:         tasks,
		Recordings:    rec,
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
		Activity:      tl,
		Control:       tl.control,
	}
}

// reattachTasks follows the tasks an earlier sidecar left running, once
// the manager has found the sandboxes (a task whose container no longer
// runs is recorded lost).
func reattachTasks(ctx context.Context, a *app) {
	select {
	case <-a.m.Reconciled():
		a.tasks.Reattach(ctx)
	case <-ctx.Done():
	}
}
