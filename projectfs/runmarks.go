package projectfs

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// RunMarks remember, in the user's state, a fact one process of the user
// proved of a run of a container, so that the user's other processes (the
// CLI's `status` and `exec` beside the app's sidecar) take it as proved
// without proving it again, which under load can take longer than they
// may wait (issue 26: `status` said "starting" of a running sandbox with
// the load average at 90). Two kinds: MarkReady, the desktop answered as
// the sandbox's own (the probe with the control password, docs/protocol.md,
// Containers: readiness); MarkEgress, the network's rules were loaded into
// the container's network namespace (docs/network.md).
//
// One file per container, named by its ID, holding the start time of the
// run the fact is of: a run that started later is not marked. Nothing
// here grants anything: a mark only spares a proof that a process of the
// same user already made of the same run.
type RunMarks struct {
	dir string
}

// The kinds of RunMarks, each a folder of the state directory.
const (
	MarkReady  = "ready"
	MarkEgress = "egress"
)

// readyKeep bounds how long a record is kept: Mark removes older ones
// (their containers are long gone, or will be probed again).
const readyKeep = 30 * 24 * time.Hour

var containerID = regexp.MustCompile(`^[0-9a-f]{12,64}$`)

// NewRunMarks keeps marks of one kind under stateDir ("" for none:
// nothing is kept, and no run is known).
func NewRunMarks(stateDir, kind string) *RunMarks {
	if stateDir == "" {
		return &RunMarks{}
	}
	return &RunMarks{dir: filepath.Join(stateDir, kind)}
}

// Mark records the fact of the run of container id that started at
// started.
func (r *RunMarks) Mark(id string, started time.Time) error {
	if r.dir == "" || !containerID.MatchString(id) {
		return nil
	}
	dir, err := openStateDir(r.dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	r.prune(dir, time.Now())
	// Renamed into place, not synced: a record a crash loses costs a
	// probe, and a start does not wait on the disk for it.
	tmp, tmpName, err := createTemp(dir, id)
	if err != nil {
		return err
	}
	defer dir.Remove(tmpName) // fails once renamed
	_, err = tmp.WriteString(started.UTC().Format(time.RFC3339Nano))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return dir.Rename(tmpName, id)
}

// Known says whether the run of container id that started at started was
// marked. A missing, unreadable or foreign record is not.
func (r *RunMarks) Known(id string, started time.Time) bool {
	if r.dir == "" || !containerID.MatchString(id) {
		return false
	}
	f, err := OpenStateFile(r.dir, id)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return false
	}
	at, err := time.Parse(time.RFC3339Nano, string(data))
	return err == nil && at.Equal(started)
}

// Forget removes container id's record, for a container that is gone.
func (r *RunMarks) Forget(id string) {
	if r.dir == "" || !containerID.MatchString(id) {
		return
	}
	os.Remove(filepath.Join(r.dir, id)) // already gone is fine
}

// prune removes the records not written for readyKeep.
func (r *RunMarks) prune(dir *os.Root, now time.Time) {
	entries, err := fs.ReadDir(dir.FS(), ".")
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && now.Sub(info.ModTime()) > readyKeep {
			dir.Remove(e.Name())
		}
	}
}
