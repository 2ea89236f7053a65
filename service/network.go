package service

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A sandbox without a network (sandbox.network "none", or "network": "none"
// in the user's config) has only its loopback: the engine publishes none of
// its ports. A sandbox on a remote engine (Config.Remote) has its ports
// on the engine's machine, where this one cannot reach them: the manager
// publishes none. Either way the host has no direct route to the
// desktop, and its ports reach the host through DesktopPorts, which the
// sidecar carries itself over execs (ports.DesktopRelay), for as long as
// the sandbox runs and this process serves.

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

// carried says whether the host has no direct route to c's desktop ports,
// so that this process carries them: c has no network, or the engine is
// on another machine.
func (m *Manager) carried(c Container) bool { return c.NoNetwork || m.cfg.Remote }

// withDesktopPorts is c with its desktop ports on the host, when the host
// cannot reach what the engine publishes (carried); c as it is otherwise.
// When they cannot be carried, c has none and the error says why (the
// readiness check then says it does not answer).
func (m *Manager) withDesktopPorts(ctx context.Context, project string, c Container) (Container, error) {
	if !m.carried(c) || !c.Running || c.Paused() {
		return c, nil
	}
	if m.cfg.DesktopPorts == nil {
		return c, errors.New("this machine cannot reach the sandbox's desktop ports, and this process does not carry them")
	}
	hostPorts, err := m.cfg.DesktopPorts.HostPorts(ctx, relayTargetOf(project, c), []int{desktop.VNCPort, desktop.NoVNCPort})
	if err != nil {
		m.log.Debug().Err(err).Str("project", project).Msg("the desktop's ports: no relay yet")
		return c, fmt.Errorf("carry the desktop's ports: %w", err)
	}
	c.Ports = hostPorts
	return c, nil
}

// published are the ports a new sandbox publishes on the engine's
// 127.0.0.1: the desktop's, unless the engine is on another machine, where
// no one but that machine's users could reach them.
func (m *Manager) published() []int {
	if m.cfg.Remote {
		return nil
	}
	return []int{desktop.VNCPort, desktop.NoVNCPort}
}

// stateOf is the state of c (stateOf), saying whether this process
// carries its desktop.
func (m *Manager) stateOf(project string, c Container, secret desktop.Secret, display desktop.Display, stopping bool) State {
	st := stateOf(project, c, secret, display, stopping)
	st.Carried = m.carried(c)
	return st
}

// networkAsk is where no network is asked for the project's sandbox: the
// file and its field, from the project's settings or the user's config;
// empty when nothing asks it.
func (m *Manager) networkAsk(project string, pc projectfs.Config) (file, field string) {
	if pc.NetworkNone() {
		return projectfs.SettingsFile(project), "sandbox.network"
	}
	if cfg, _ := m.currentPolicy(); cfg.Network.None {
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

// The network policy (package netpolicy) is judged outside service; what
// service holds of it is what it holds of every policy: the user's
// config.json, the project's settings, and the approval of what the
// repository asks beyond the user's own policy (kind "network", as a
// Dockerfile and limits above the caps are approved). A start fails,
// making nothing, while config.json's network cannot be used (a slip there
// must not open what the user meant to close) or while the repository's
// widening waits for approval.

// ApprovalNetwork is the kind of approval a repository's wider network
// policy needs.
const ApprovalNetwork = "network"

// UserNetwork is the user's network policy, or, while a key of
// config.json's network is wrong, a *projectfs.ConfigError naming it.
func (m *Manager) UserNetwork() (netpolicy.Config, error) {
	cfg, err := m.currentPolicy()
	var ue *projectfs.UserConfigError
	if !errors.As(err, &ue) {
		return cfg.Network, nil
	}
	var keys, reasons []string
	for _, p := range ue.Problems {
		if projectfs.NetworkKey(p.Key) {
			keys, reasons = append(keys, p.Key), append(reasons, p.Key+" "+p.Reason)
		}
	}
	if keys == nil {
		return cfg.Network, nil
	}
	return netpolicy.Config{}, &projectfs.ConfigError{File: ue.File, Field: keys[0], Reason: strings.TrimPrefix(strings.Join(reasons, "; "), keys[0]+" ")}
}

// RepositoryNetwork is the project's own network policy (sandbox.network)
// and whether the user approved exactly what it asks beyond the user's
// policy. A settings file that is refused counts as naming none.
func (m *Manager) RepositoryNetwork(path string) (netpolicy.Repository, bool, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return netpolicy.Repository{}, false, err
	}
	pc, err := projectfs.ReadConfig(project)
	if errors.Is(err, projectfs.ErrRefused) {
		return netpolicy.Repository{}, false, nil
	}
	if err != nil {
		return netpolicy.Repository{}, false, err
	}
	user, err := m.UserNetwork()
	if err != nil {
		return netpolicy.Repository{}, false, err
	}
	repo := pc.NetworkPolicy()
	w := repo.Widens(user)
	return repo, w.Empty() || m.approvals.Approved(project, ApprovalNetwork, w.Digest()), nil
}

// checkNetwork refuses a start of a sandbox with a network while the
// user's network policy cannot be used, or while what the repository asks
// beyond it is not approved.
func (m *Manager) checkNetwork(project string, pc projectfs.Config) error {
	user, err := m.UserNetwork()
	if user.None || pc.NetworkNone() {
		return nil
	}
	if err != nil {
		return err
	}
	if a, ok := networkAsk(pc, user); ok {
		return m.require(project, a)
	}
	return nil
}

// networkAsk is the approval the repository's network policy needs, if
// it asks anything beyond the user's.
func networkAsk(pc projectfs.Config, user netpolicy.Config) (Approval, bool) {
	w := pc.NetworkPolicy().Widens(user)
	if w.Empty() {
		return Approval{}, false
	}
	return Approval{Kind: ApprovalNetwork, Summary: w.Summary(), Digest: w.Digest(), Content: w.Content()}, true
}

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
	// Loaded is the start time of the container's run whose rules this
	// process's Start put in place, if one did.
	Loaded(containerID string) (time.Time, bool)
	// Carried says whether a process of the user carries the sandbox's
	// proxy now.
	Carried(ctx context.Context, containerID string) (bool, error)
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
		// Start loaded the rules into the run's namespace, where they
		// stay until it ends: the sandbox holds no NET_ADMIN to remove
		// them, and without a proxy they refuse (docs/network.md). c may
		// be the container before its start: the run is the Network's.
		if run, ok := m.cfg.Network.Loaded(c.ID); ok {
			if err := m.marks.MarkLoaded(c.ID, run); err != nil {
				m.log.Debug().Err(err).Msg("could not record the network's rules for other processes")
			}
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
	if goesOn, lookErr := m.runGoesOn(ctx, keyOf(c)); lookErr == nil && !goesOn {
		// The helper could not join a network namespace that went with
		// the run (killed from outside meanwhile): the run's end is the
		// news, which its die event brings, not the rules.
		m.log.Debug().Err(err).Str("project", b.project).Msg("the run ended while its network rules were being put in place")
		return false
	}
	m.log.Warn().Err(err).Str("project", b.project).Msg("a running sandbox's network rules could not be put in place")
	r := b.runOf(c)
	b.mu.Lock()
	r.unreadyWhy = err.Error()
	b.mu.Unlock()
	return false
}

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
	if err == nil && c.Labels[images.LabelBrowser] == "" {
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
