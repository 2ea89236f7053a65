package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Two processes of one user may work on one project's sandbox at once: two
// sidecars (two windows of the app), or `pilot-sandbox start` while `serve`
// runs. Each takes the project's lock file under the state directory for
// every change it makes (start, stop, remove, and the writes of
// .pilot/sandbox.json), so that they take turns instead of fighting: a
// second start finds the sandbox running and reads its passwords back,
// rather than installing passwords of its own over the first one's. A
// process that only looks (a status, a resync) while another holds the
// lock reads Docker but writes nothing.
//
// The locks are advisory (flock, LockFileEx on Windows) and end with the
// process that holds them, so a sidecar killed mid-start leaves none behind.

// lockDir is where the project lock files are; "" when the manager has no
// state directory, and so locks only within its own process.
func (m *Manager) lockDir() string {
	if m.cfg.StateDir == "" {
		return ""
	}
	return filepath.Join(m.cfg.StateDir, "locks")
}

func (m *Manager) lockPath(project string) string {
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(m.lockDir(), hex.EncodeToString(sum[:8])+".lock")
}

// lockWait is how often a process waiting for another's lock tries again.
const lockWait = 100 * time.Millisecond

// lockProject resolves path and takes the project's operation lock: this
// process's, then the other processes'. It waits for both as long as ctx
// lets it; while another process holds the project, this process's lock is
// let go between tries, so that a status here can still look at Docker.
func (m *Manager) lockProject(ctx context.Context, path string) (*box, error) {
	project, err := CanonicalProject(path)
	if err != nil {
		return nil, err
	}
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
			holder, _ := os.ReadFile(m.lockPath(b.project))
			m.progress(b.project, StageStart, "Waiting for another pilot-sandbox process working on this sandbox ("+
				strings.TrimSpace(string(holder))+")", 0, 0)
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
		unflock(b.flock)
		b.flock.Close()
		b.flock = nil
	}
	b.lockless = false
	b.unlock()
}

// mayWrite says whether the holder of the project's operation lock may
// write its files: no other process is working on the project, or there is
// no way to know.
func (m *Manager) mayWrite(b *box) bool { return b.flock != nil || b.lockless || m.lockDir() == "" }

// tryLockFile takes the project's lock file if it is free, setting b.flock.
// A lock file that cannot be made (a read-only state directory) must not
// stop the sidecar: the process then goes on with its own lock alone
// (b.lockless), and says so in the log.
func (m *Manager) tryLockFile(b *box) {
	if m.lockDir() == "" {
		return
	}
	f, err := m.openLockFile(b.project)
	if err != nil {
		m.log.Warn().Err(err).Str("project", b.project).Msg("no project lock file: other pilot-sandbox processes of this user may not wait for this one")
		b.lockless = true
		return
	}
	ok, err := tryFlock(f)
	if err != nil { // a file system without locks
		f.Close()
		m.log.Warn().Err(err).Str("project", b.project).Msg("cannot lock the project lock file: other pilot-sandbox processes of this user may not wait for this one")
		b.lockless = true
		return
	}
	if !ok {
		f.Close()
		return
	}
	// Who holds it, for a process that waits (and for a person looking).
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprintf("pid %d, %s\n", os.Getpid(), b.project)), 0)
	b.flock = f
}

func (m *Manager) openLockFile(project string) (*os.File, error) {
	if err := os.MkdirAll(m.lockDir(), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(m.lockPath(project), os.O_RDWR|os.O_CREATE, 0o600)
}
