package service

import (
	"context"
	"io"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// guardPause is how long the sidecar waits before it starts pilot-pidguard
// again after it ended: a sandbox that kills it in a loop costs an exec a
// second, no more.
const guardPause = time.Second

// startGuard keeps pilot-pidguard running as the sandbox user for this run
// of a container whose desktop runs as a user of its own (which could not
// signal a flood of the sandbox user's); older images start it from their
// entrypoint. The sandbox user can kill it, being its user: an exec stays
// attached to it, and when it ends while the run goes on, another is
// started (tried each second). No exec starts while the sandbox is at its
// process limit, so a guard killed together with the start of a flood is
// replaced only once the flood ends (pidguard.sh). The guard outlives this process (its exec does not end
// with the connection), unwatched. Each sidecar that starts or finds the
// sandbox keeps a guard of its own; the oldest acts and the others stand
// by to take over (pidguard.sh). A sandbox
// without it still has its process limit, so a failure is only logged.
func (m *Manager) startGuard(b *box, c Container) {
	if user, _ := desktopUserOf(c); user == desktop.User {
		return
	}
	// The first one starts before the start returns: a command-line start
	// exits right after, and the guard must be running by then.
	s, err := m.execGuard(c.ID)
	if err != nil {
		m.log.Warn().Err(err).Str("container", c.ID).Msg("could not start pilot-pidguard; fork floods will hold the sandbox's process slots")
		return
	}
	go m.keepGuard(b, keyOf(c), s)
}

// guardOnce starts the guard of run r of c unless this process did.
func (m *Manager) guardOnce(b *box, r *run, c Container) {
	b.mu.Lock()
	guard := !r.guarded
	r.guarded = true
	b.mu.Unlock()
	if guard {
		m.startGuard(b, c)
	}
}

func (m *Manager) execGuard(id string) (ExecSession, error) {
	return m.docker.ExecAttach(context.Background(), id, ExecSpec{Cmd: desktop.GuardCommand, User: desktop.User})
}

// keepGuard watches the guard of one run, s, and starts another each time
// it ends, until the run ends. It logs at debug level (the log file's):
// it may log after whoever started the run is gone (a test that ended,
// its sandbox being removed).
func (m *Manager) keepGuard(b *box, key runKey, s ExecSession) {
	log := m.log.With().Str("container", key.id).Logger()
	for {
		io.Copy(io.Discard, s) // until it ends: it writes to its log file
		s.Close()
		if !m.runGoesOn(b, key) {
			return
		}
		log.Debug().Msg("pilot-pidguard ended while the sandbox runs (killed from inside?): starting it again")
		time.Sleep(guardPause)
		var err error
		if s, err = m.execGuard(key.id); err != nil {
			log.Debug().Err(err).Msg("could not start pilot-pidguard again; fork floods will hold the sandbox's process slots")
			return
		}
	}
}

// runGoesOn says whether the container still runs the run of key.
func (m *Manager) runGoesOn(b *box, key runKey) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := m.docker.InspectContainer(ctx, key.id)
	return err == nil && c.Running && keyOf(c) == key && b.currentRun(key.id) != nil
}
