package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// Desktop returns the display of the project's running sandbox, driven
// through the desktop agent of the container's current run.
func (m *Manager) Desktop(ctx context.Context, path string) (*desktop.Desktop, error) {
	b, st, err := m.running(ctx, path)
	if err != nil {
		return nil, err
	}
	return desktop.New(&desktopConn{m: m, b: b, containerID: st.ContainerID}, st.Display), nil
}

// Screenshot captures the project's display at full size.
func (m *Manager) Screenshot(ctx context.Context, path string) (desktop.Screenshot, error) {
	d, err := m.Desktop(ctx, path)
	if err != nil {
		return desktop.Screenshot{}, err
	}
	return d.Screenshot(ctx)
}

// desktopConn is a desktop.Conn for one container of a project.
type desktopConn struct {
	m           *Manager
	b           *box
	containerID string
}

func (c *desktopConn) Agent(ctx context.Context) (*desktop.Agent, error) {
	r := c.b.currentRun(c.containerID)
	if r == nil {
		return nil, fmt.Errorf("%w: it stopped", ErrNotRunning)
	}
	return c.m.agentFor(ctx, r)
}

// Explain turns an agent that went away into what happened to the sandbox:
// most often it was stopped.
func (c *desktopConn) Explain(ctx context.Context, err error) error {
	if errors.Is(err, desktop.ErrTimeout) {
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	}
	if !errors.Is(err, desktop.ErrGone) && !errors.Is(err, ErrNotRunning) && !errors.Is(err, ErrContainerNotFound) {
		return err
	}
	c.m.recheck(ctx, c.b)
	if st := c.b.snapshot(); st == nil || st.Status != StatusRunning {
		return fmt.Errorf("%w: it stopped", ErrNotRunning)
	}
	return err
}
