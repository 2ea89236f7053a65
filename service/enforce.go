package service

import (
	"context"
	"fmt"

	"github.com/pilot-sandbox/pilot-sandbox/images"
)

// Network enforces a sandbox's network policy from outside the sandbox
// (package egress, docs/network.md). The manager knows none of how: it
// starts it with every run of a sandbox that has a network, before it
// reports the sandbox running and before any exec as the sandbox user,
// and stops it when the run ends.
type Network interface {
	// Start returns once the sandbox's egress rules are in place; an
	// error fails the start (fail closed).
	Start(ctx context.Context, project, containerID string) error
	// Stop lets go of the sandbox's network (its run ended).
	Stop(containerID string)
	// ExecEnv is the environment of an exec in a sandbox with a network:
	// the proxy, and an id of what the exec was started for.
	ExecEnv(cause ExecCause) []string
	// Blocked is one line for an agent naming what the project's sandbox
	// was refused since the last call, or "".
	Blocked(project string) string
}

// NetworkBlocked is one line naming what the project's sandbox was
// refused since the last call, or "": sandbox_exec's result ends with it.
func (m *Manager) NetworkBlocked(project string) string {
	if m.cfg.Network == nil {
		return ""
	}
	return m.cfg.Network.Blocked(project)
}

// ExecCause is what an exec was started for, as far as the caller knows:
// a tool call (with its JSON-RPC or MCP request id), a sandbox/exec
// command, a task. It becomes the hint of the exec's connections.
type ExecCause struct {
	Tool, RequestID, Exec, Task string
}

// networkUp starts the sandbox's network enforcement beside the desktop's
// readiness probe, and returns where its answer will be (nil at once for a
// sandbox without a network, or a manager with no Network).
func (m *Manager) networkUp(ctx context.Context, project string, c Container) <-chan error {
	done := make(chan error, 1)
	if m.cfg.Network == nil || c.NoNetwork {
		done <- nil
		return done
	}
	go func() {
		// The helper runs the desktop image whatever the sandbox's is:
		// it must be there, and this binary's (nft, the proxy).
		if err := m.images.Ensure(ctx, images.VariantDesktop, nil); err != nil {
			done <- fmt.Errorf("the desktop image, which enforces the network policy: %w", err)
			return
		}
		if err := m.cfg.Network.Start(ctx, project, c.ID); err != nil {
			done <- fmt.Errorf("the network policy's rules could not be put in place: %w", err)
			return
		}
		done <- nil
	}()
	return done
}

// networkDown lets go of a run's network.
func (m *Manager) networkDown(containerID string) {
	if m.cfg.Network != nil {
		m.cfg.Network.Stop(containerID)
	}
}

// networkEnv is env with the network's environment first, for an exec in
// a sandbox that has one: every exec the sidecar starts gets it (a
// client's command with its cause, the sidecar's own with none).
func (m *Manager) networkEnv(st State, cause ExecCause, env []string) []string {
	if m.cfg.Network == nil || st.Network == NetworkNone {
		return env
	}
	return append(m.cfg.Network.ExecEnv(cause), env...)
}

// networkFound puts a running sandbox's network under this process's
// enforcement (carried here, or found carried by another process), for a
// run the sidecar did not start: found running when it starts, or started
// outside it (docker start), whose network has no rules until the hook
// puts them in. Until then the run is not ready (not reported running);
// why is kept in the run.
func (m *Manager) networkFound(ctx context.Context, b *box, c Container) bool {
	err := <-m.networkUp(ctx, b.project, c)
	if err == nil {
		return true
	}
	m.log.Warn().Err(err).Str("project", b.project).Msg("a running sandbox's network rules could not be put in place")
	r := b.runOf(c)
	b.mu.Lock()
	r.unreadyWhy = err.Error()
	b.mu.Unlock()
	return false
}
