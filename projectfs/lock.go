package projectfs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Locks are the per-project lock files under the state directory. Two
// processes of one user may work on one project's sandbox at once: two
// sidecars (two windows of the app), or `pilot-sandbox start` while `serve`
// runs. Each takes the project's lock file for every change it makes, so
// that they take turns instead of fighting.
//
// The locks are advisory (flock, LockFileEx on Windows) and end with the
// process that holds them, so a process killed mid-start leaves none behind.
type Locks struct {
	dir string
}

// NewLocks returns the lock files under stateDir; with no state directory
// there are none, and a process locks only within itself.
func NewLocks(stateDir string) Locks {
	if stateDir == "" {
		return Locks{}
	}
	return Locks{dir: filepath.Join(stateDir, "locks")}
}

// Enabled says whether there are lock files at all.
func (l Locks) Enabled() bool { return l.dir != "" }

func (l Locks) path(project string) string {
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(l.dir, hex.EncodeToString(sum[:8])+".lock")
}

// Lock is a project's lock file, held.
type Lock struct{ f *os.File }

// Release lets the lock go.
func (k *Lock) Release() {
	unflock(k.f)
	k.f.Close()
}

// TryLock takes the project's lock file if it is free. It returns a nil
// Lock and no error when another process holds it, and an error when the
// file cannot be made or locked at all (a read-only state directory, a
// file system without locks).
func (l Locks) TryLock(project string) (*Lock, error) {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(l.path(project), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	ok, err := tryFlock(f)
	if err != nil || !ok {
		f.Close()
		return nil, err
	}
	// Who holds it, for a process that waits (and for a person looking).
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprintf("pid %d, %s\n", os.Getpid(), project)), 0)
	return &Lock{f: f}, nil
}

// maxHolder bounds what Holder reads: "pid N, PATH" with a path of at
// most a few KiB.
const maxHolder = 64 << 10

// Holder says which process holds the project's lock, as the holder wrote it.
func (l Locks) Holder(project string) string {
	holder, _ := readBounded(l.path(project), maxHolder)
	return strings.TrimSpace(string(holder))
}
