package service

import (
	"context"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A running sandbox is in use while the agent or the user works with it:
// a tool call, an exec, a file call (each calls Touch, or goes through
// running, which does), or a viewer connected to its desktop. One that
// nothing used for idleStop is stopped and kept.
//
// Calls are counted as they come, at no cost. Viewers are looked for only
// once a sandbox has had no call for idleStop, with one exec in it (its
// /proc/net/tcp), and then every tenth of idleStop while one stays
// connected: that exec is the idle check's only real cost (about 1.5 ms
// of the sidecar's CPU and 55 ms of the engine's, measured with
// BenchmarkPolicyRound), and a sandbox the agent is using never pays it.

// shareEvery is how often a sandbox's use is written down for the user's
// other processes (projectfs.Activity): often enough for idleStop's
// minute, seldom enough to cost nothing.
const shareEvery = 5 * time.Second

// Touch records a use of the project's sandbox: the RPC server calls it
// for every tool call. A path that names no project is ignored.
func (m *Manager) Touch(path string) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return
	}
	m.touch(m.box(project))
}

// touch records a use of the box's current run, and, now and then, for
// the user's other processes too.
func (m *Manager) touch(b *box) {
	now := m.cfg.Now()
	b.mu.Lock()
	r := b.run
	share := false
	if r != nil {
		r.lastActive = now
		share = now.Sub(r.sharedAt) >= shareEvery
		if share {
			r.sharedAt = now
		}
	}
	b.mu.Unlock()
	if share {
		if err := m.policy.activity.Touch(b.project, now); err != nil {
			m.log.Debug().Err(err).Str("project", b.project).Msg("could not mark the sandbox's use for other processes")
		}
	}
}

// lastUse is the last use of the run any process saw; a run the policy
// had not seen before counts as used now.
func (m *Manager) lastUse(b *box, r *run, now time.Time) time.Time {
	b.mu.Lock()
	if r.lastActive.IsZero() {
		r.lastActive = now
	}
	last := r.lastActive
	b.mu.Unlock()
	if shared := m.policy.activity.Last(b.project); shared.After(last) {
		last = shared
	}
	return last
}

// checkIdle stops the sandbox if nothing used it for idle and no viewer
// is connected. Once a viewer was seen, it looks again every tenth of
// idle until the viewer has gone, so that idleStop counts from about
// when it left (at most a tenth and a round early).
func (m *Manager) checkIdle(ctx context.Context, b *box, r *run, st State, idle time.Duration) {
	now := m.cfg.Now()
	unused := now.Sub(m.lastUse(b, r, now))
	b.mu.Lock()
	viewing, lookedAt := r.viewing, r.viewersAt
	b.mu.Unlock()
	switch {
	case viewing && now.Sub(lookedAt) < idle/10:
		return // watched a moment ago
	case !viewing && unused < idle:
		return
	}
	viewers, err := m.viewers(ctx, st.ContainerID)
	if err != nil {
		m.log.Debug().Err(err).Str("project", b.project).Msg("could not look for viewers; not stopping the sandbox this time")
		return
	}
	b.mu.Lock()
	r.viewing, r.viewersAt = viewers > 0, now
	if r.viewing {
		r.lastActive = now
	}
	b.mu.Unlock()
	if viewers > 0 || unused < idle {
		return
	}
	why := "stopped after " + projectfs.FormatDuration(idle) + " without activity"
	m.policyStop(ctx, b, st.ContainerID, why, func() bool {
		// A call may have come while the viewers were looked for.
		return m.cfg.Now().Sub(m.lastUse(b, r, now)) >= idle
	})
}

// viewerTimeout bounds the look for viewers.
const viewerTimeout = 10 * time.Second

// viewers counts the connections to the sandbox's VNC server and
// websockify, from inside it: the only view that is right whatever the
// engine (a remote one, Docker Desktop's virtual machine) and its
// port publishing (docker-proxy or not).
func (m *Manager) viewers(ctx context.Context, id string) (int, error) {
	res, err := m.docker.Exec(ctx, id, ExecSpec{Cmd: desktop.ViewerCommand, User: desktop.User, Timeout: viewerTimeout})
	if err != nil {
		return 0, err
	}
	return desktop.ViewerConnections(res.Stdout), nil
}
