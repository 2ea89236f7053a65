package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A sandbox without a network (sandbox.network "none", or "network": "none"
// in the user's config) has only its loopback: the engine publishes none of
// its ports. Its desktop's ports reach the host through DesktopPorts,
// which the sidecar carries itself over execs (ports.DesktopRelay), for as
// long as the sandbox runs and this process serves.

// NetworkNone is the value of State.Network for a sandbox without a network.
const NetworkNone = "none"

// DesktopPorts gives host ports on 127.0.0.1 that reach ports of a running
// container without a network.
type DesktopPorts interface {
	// HostPorts returns, for each of ports, the host port carrying it to
	// the target's container; a call for another container of the project
	// lets go of the former one's.
	HostPorts(ctx context.Context, t RelayTarget, ports []int) (map[int]int, error)
}

// withDesktopPorts is c with its desktop ports on the host, when the engine
// publishes none because c has no network; c as it is otherwise. When they
// cannot be carried, c has none and the error says why (the readiness
// check then says it does not answer).
func (m *Manager) withDesktopPorts(ctx context.Context, project string, c Container) (Container, error) {
	if !c.NoNetwork || !c.Running || c.State == "paused" {
		return c, nil
	}
	if m.cfg.DesktopPorts == nil {
		return c, errors.New("the sandbox has no network, and this process does not carry its desktop's ports")
	}
	hostPorts, err := m.cfg.DesktopPorts.HostPorts(ctx, relayTargetOf(project, c), []int{desktop.VNCPort, desktop.NoVNCPort})
	if err != nil {
		m.log.Debug().Err(err).Str("project", project).Msg("the desktop of a sandbox without a network: no relay yet")
		return c, fmt.Errorf("carry the desktop's ports of a sandbox without a network: %w", err)
	}
	c.Ports = hostPorts
	return c, nil
}

// networkAsk is where no network is asked for the project's sandbox: the
// file and its field, from the project's settings or the user's config;
// empty when nothing asks it.
func (m *Manager) networkAsk(project string, pc projectfs.Config) (file, field string) {
	if pc.NetworkNone() {
		return projectfs.SettingsFile(project), "sandbox.network"
	}
	if cfg, _ := m.currentPolicy(); cfg.NetworkNone {
		return m.policy.file, "network"
	}
	return "", ""
}

// networkNone says whether the project's new sandbox gets no network, and
// refuses it when this process cannot carry its desktop (no DesktopPorts).
func (m *Manager) networkNone(project string, pc projectfs.Config) (bool, error) {
	file, field := m.networkAsk(project, pc)
	switch {
	case field == "":
		return false, nil
	case m.cfg.DesktopPorts == nil:
		return false, &projectfs.ConfigError{File: file, Field: field,
			Reason: `is "none", which this process cannot run: it has no relay for the desktop's ports of a sandbox without a network`}
	}
	return true, nil
}

// checkMadeNetwork refuses to start a sandbox made with a network when no
// network is asked now: the container's network is fixed at its creation,
// and starting it would give the network the user took away. A sandbox
// made without one stays so; the start says it.
func (m *Manager) checkMadeNetwork(b *box, pc projectfs.Config, c Container) error {
	file, field := m.networkAsk(b.project, pc)
	switch {
	case field != "" && !c.NoNetwork:
		return &projectfs.ConfigError{File: file, Field: field,
			Reason: `is "none", but this sandbox was made with a network, which it keeps: remove the sandbox (its files go with it) to make one without`}
	case field == "" && c.NoNetwork:
		m.progress(b.project, StageStart, "This sandbox was made without a network and stays so; "+
			"remove the sandbox (its files go with it) to make one with the network", 0, 0)
	}
	return nil
}
