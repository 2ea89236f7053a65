package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// run is what the sidecar learns of one run of a project's container, from
// its start to its end: its VNC passwords, whether its desktop answered,
// and its desktop agent. Every start of the container is a new run with a
// new value, so nothing learned of one run (a password, an agent's stream)
// can outlive it or be handed out for another.
type run struct {
	key         runKey
	desktopUser string // runs the desktop agent

	// Guarded by the box's mu.
	secret     desktop.Secret // zero until known
	ready      bool           // its desktop answered
	unreadyWhy string         // why it never did within ReadyTimeout
	// lastActive is its last use seen here, zero until the policy or a
	// use sees it, and sharedAt the last written for other processes
	// (usage.go).
	lastActive, sharedAt time.Time
	viewing              bool      // a viewer was connected at the last look
	viewersAt            time.Time // the last look
	// What the disk policy knows of the run (usage.go): whether it was
	// measured, how far it may grow, and whether its use was warned of.
	diskSeen      bool
	diskAllowance int64
	diskWarned    bool
	diskNextAt    time.Time // a slow layer is measured no sooner

	guarded bool // this process keeps its pilot-pidguard running (guard.go)

	agentMu sync.Mutex     // guards agent; one agent starts at a time
	agent   *desktop.Agent // the desktop agent, once started
}

// runKey names a run: every start of a container gives it a new start time.
type runKey struct {
	id      string
	started time.Time
}

func keyOf(c Container) runKey { return runKey{id: c.ID, started: c.StartedAt} }

// runOf returns the run of c as the box knows it, making a new one (and
// ending the agent of the one before) when c has started since.
func (b *box) runOf(c Container) *run {
	key := keyOf(c)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.run != nil && b.run.key == key {
		return b.run
	}
	b.endRunLocked()
	user, _ := desktopUserOf(c)
	b.run = &run{key: key, desktopUser: user}
	return b.run
}

// currentRun is the run of the box's container if it is the one with this
// ID, or nil.
func (b *box) currentRun(containerID string) *run {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.run != nil && b.run.key.id == containerID {
		return b.run
	}
	return nil
}

// endRun forgets the current run, for a container that is gone.
func (b *box) endRun() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endRunLocked()
}

func (b *box) endRunLocked() {
	if b.run == nil {
		return
	}
	r := b.run
	b.run = nil
	// Closing the agent's stream may wait on Docker: not under b.mu.
	go r.closeAgent()
}

func (r *run) closeAgent() {
	r.agentMu.Lock()
	defer r.agentMu.Unlock()
	if r.agent != nil {
		r.agent.Close()
		r.agent = nil
	}
}

// agentFor returns the run's desktop agent, starting one if there is none
// or the last one ended.
func (m *Manager) agentFor(ctx context.Context, r *run) (*desktop.Agent, error) {
	r.agentMu.Lock()
	defer r.agentMu.Unlock()
	if r.agent != nil && r.agent.Alive() {
		return r.agent, nil
	}
	if r.agent != nil {
		r.agent.Close()
	}
	a, err := m.startAgent(ctx, r.key.id, r.desktopUser)
	if err != nil {
		return nil, err
	}
	r.agent = a
	return a, nil
}

// startAgent starts the desktop agent in a running container as the
// desktop's user, over one attached exec, and checks that it answers.
func (m *Manager) startAgent(ctx context.Context, containerID, user string) (*desktop.Agent, error) {
	if len(m.cfg.Agent) == 0 {
		return nil, fmt.Errorf("no desktop agent is configured")
	}
	session, err := m.docker.ExecAttach(ctx, containerID, ExecSpec{
		Cmd:  desktop.Command(m.cfg.Agent),
		User: user,
		Env:  []string{desktop.DisplayEnv},
	})
	if err != nil {
		return nil, fmt.Errorf("start desktop agent: %w", err)
	}
	return desktop.Dial(ctx, session)
}
