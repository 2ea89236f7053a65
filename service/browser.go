package service

import (
	"context"
	"fmt"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
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
	// User runs the relays in the container.
	User string
}

// Run names the target's run of its container.
func (t RelayTarget) Run() string {
	return fmt.Sprintf("%s@%d", t.ContainerID, t.StartedAt)
}

// RelayTarget is where the project's relays run: its running sandbox's
// current run. ErrNotRunning when it does not run.
func (m *Manager) RelayTarget(ctx context.Context, project string) (RelayTarget, error) {
	_, st, err := m.running(ctx, project)
	if err != nil {
		return RelayTarget{}, err
	}
	return relayTargetOf(st.ProjectPath, st.ContainerID, st.StartedAt), nil
}

func relayTargetOf(project, containerID string, startedAt int64) RelayTarget {
	return RelayTarget{Project: project, ContainerID: containerID, StartedAt: startedAt, User: desktop.User}
}

// BrowserTarget is RelayTarget for sandbox/browser's DevTools relay:
// ErrNoBrowser when the sandbox's image has no browser.
func (m *Manager) BrowserTarget(ctx context.Context, project string) (RelayTarget, error) {
	_, st, err := m.running(ctx, project)
	if err != nil {
		return RelayTarget{}, err
	}
	c, err := m.docker.InspectContainer(ctx, st.ContainerID)
	if err != nil {
		return RelayTarget{}, err
	}
	if c.Labels[LabelBrowser] == "" {
		return RelayTarget{}, fmt.Errorf("%w: its image %s is the desktop without a browser (set sandbox.image to \"browser\" and remove the sandbox)", ErrNoBrowser, st.Image)
	}
	return relayTargetOf(st.ProjectPath, st.ContainerID, st.StartedAt), nil
}
