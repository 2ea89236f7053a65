package service

import (
	"context"
	"fmt"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A process takes the project's lock file (projectfs.Locks) for every change
// it makes (start, stop, remove, and the writes of .pilot/sandbox.json), so
// that a second start finds the sandbox running and reads its passwords
// back, rather than installing passwords of its own over the first one's.
// A process that only looks (a status, a resync) while another holds the
// lock reads Docker but writes nothing.

// lockWait is how often a process waiting for another's lock tries again.
const lockWait = 100 * time.Millisecond

// lockProject resolves path and takes the project's operation lock: this
// process's, then the other processes'. It waits for both as long as ctx
// lets it; while another process holds the project, this process's lock is
// let go between tries, so that a status here can still look at Docker.
func (m *Manager) lockProject(ctx context.Context, path string) (*box, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, err
	}
	return m.lockBox(ctx, project)
}

// lockBox is lockProject for a project path already canonical.
func (m *Manager) lockBox(ctx context.Context, project string) (*box, error) {
	b := m.box(project)
	announced, started := false, time.Now()
	for {
		if err := b.lock(ctx); err != nil {
			return nil, err
		}
		m.tryLockFile(b)
		if m.mayWrite(b) {
			return b, nil
		}
		b.unlock()
		if !announced && time.Since(started) > time.Second {
			m.progress(b.project, StageStart, "Waiting for another pilot-sandbox process working on this sandbox ("+
				m.locks.Holder(b.project)+")", 0, 0)
			announced = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for another pilot-sandbox process working on this sandbox: %w", ctx.Err())
		case <-time.After(lockWait):
		}
	}
}

// tryLockProject takes the project's operation lock if no one in this
// process holds it, and the other processes' lock if it is free: without
// it the holder may look at Docker but not write the project's files.
func (m *Manager) tryLockProject(b *box) bool {
	if !b.tryLock() {
		return false
	}
	m.tryLockFile(b)
	return true
}

func (m *Manager) unlockProject(b *box) {
	if b.flock != nil {
		b.flock.Release()
		b.flock = nil
	}
	b.lockless = false
	b.unlock()
}

// mayWrite says whether the holder of the project's operation lock may
// write its files: no other process is working on the project, or there is
// no way to know.
func (m *Manager) mayWrite(b *box) bool { return b.flock != nil || b.lockless || !m.locks.Enabled() }

// tryLockFile takes the project's lock file if it is free, setting b.flock.
// A lock file that cannot be made (a read-only state directory) must not
// stop the sidecar: the process then goes on with its own lock alone
// (b.lockless), and says so in the log.
func (m *Manager) tryLockFile(b *box) {
	if !m.locks.Enabled() {
		return
	}
	lock, err := m.locks.TryLock(b.project)
	if err != nil {
		m.log.Warn().Err(err).Str("project", b.project).Msg("no project lock file: other pilot-sandbox processes of this user may not wait for this one")
		b.lockless = true
		return
	}
	b.flock = lock // nil when another process holds it
}
