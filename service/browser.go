package service

import (
	"context"
	"fmt"
	"net/netip"
)

// LabelBrowser marks an image with a browser: its value names it.
const LabelBrowser = "pilot.sandbox.browser"

// RelayTarget is one run of a project's running sandbox, as the sidecar's
// relays reach it (package ports): they run in its container, and end
// with the run.
type RelayTarget struct {
	Project     string
	ContainerID string
	// StartedAt, with ContainerID, names the run: a new start of the same
	// container is a new run.
	StartedAt int64
	// User runs the relays: the desktop's user, whom the exec user cannot
	// signal, trace or read, so a program in the sandbox cannot write into
	// a relay's stdout what the sidecar reads there (issue 28, N1). The
	// sandbox user in images older than that user (desktopUserOf).
	User string
	// Address is the container's own address on its network, from the
	// engine: what the direct routes dial, with only the port from the
	// relay. Not valid when the container has none.
	Address netip.Addr
}

// Run names the target's run of its container.
func (t RelayTarget) Run() string {
	return fmt.Sprintf("%s@%d", t.ContainerID, t.StartedAt)
}

// RelayTarget is where the project's relays run: its running sandbox's
// current run. ErrNotRunning when it does not run.
func (m *Manager) RelayTarget(ctx context.Context, project string) (RelayTarget, error) {
	t, _, err := m.relayTarget(ctx, project)
	return t, err
}

// BrowserTarget is RelayTarget for sandbox/browser's DevTools relay:
// ErrNoBrowser when the sandbox's image has no browser.
func (m *Manager) BrowserTarget(ctx context.Context, project string) (RelayTarget, error) {
	t, c, err := m.relayTarget(ctx, project)
	if err == nil && c.Labels[LabelBrowser] == "" {
		return RelayTarget{}, fmt.Errorf("%w: its image %s is the desktop without a browser (set sandbox.image to \"browser\" and remove the sandbox)", ErrNoBrowser, c.Image)
	}
	return t, err
}

func (m *Manager) relayTarget(ctx context.Context, project string) (RelayTarget, Container, error) {
	_, st, err := m.running(ctx, project)
	if err != nil {
		return RelayTarget{}, Container{}, err
	}
	c, err := m.docker.InspectContainer(ctx, st.ContainerID)
	if err != nil {
		return RelayTarget{}, Container{}, err
	}
	t := relayTargetOf(st.ProjectPath, c)
	t.StartedAt = st.StartedAt
	if m.cfg.Remote {
		// The container's address is on the engine's machine, not routed
		// here: no direct route, and none tried (the same address here
		// may be another host of the user's, which must not get a
		// route's secret).
		t.Address = netip.Addr{}
	}
	return t, c, nil
}

// relayTargetOf is the target of c's current run, for project.
func relayTargetOf(project string, c Container) RelayTarget {
	user, _ := desktopUserOf(c)
	t := RelayTarget{Project: project, ContainerID: c.ID, StartedAt: millis(c.StartedAt), User: user}
	if ip, err := netip.ParseAddr(c.IP); err == nil {
		t.Address = ip
	}
	return t
}
