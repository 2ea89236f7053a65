package projectfs

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// ReadyRuns remembers, in the user's state, the runs of containers whose
// desktops answered a sidecar of this user as their own (the probe with
// the control password, docs/protocol.md, Containers: readiness), so that
// another process of the same user (the CLI's `status` beside the app's
// sidecar) takes such a run for ready without probing it again, which
// under load can take longer than a probe may (issue 26: `status` said
// "starting" of a running sandbox with the load average at 90).
//
// One file per container, named by its ID, holding the start time of the
// run that answered: a run that started later is not taken for ready.
// Nothing here grants anything: the record only spares a probe that the
// same user's sidecar already made of the same run.
type ReadyRuns struct {
	dir string
}

// readyKeep bounds how long a record is kept: Mark removes older ones
// (their containers are long gone, or will be probed again).
const readyKeep = 30 * 24 * time.Hour

var containerID = regexp.MustCompile(`^[0-9a-f]{12,64}$`)

// NewReadyRuns keeps its records under stateDir ("" for none: nothing is
// kept, and no run is known).
func NewReadyRuns(stateDir string) *ReadyRuns {
	if stateDir == "" {
		return &ReadyRuns{}
	}
	return &ReadyRuns{dir: filepath.Join(stateDir, "ready")}
}

// Mark records that the run of container id that started at started
// answered.
func (r *ReadyRuns) Mark(id string, started time.Time) error {
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
func (r *ReadyRuns) Known(id string, started time.Time) bool {
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
func (r *ReadyRuns) Forget(id string) {
	if r.dir == "" || !containerID.MatchString(id) {
		return
	}
	os.Remove(filepath.Join(r.dir, id)) // already gone is fine
}

// prune removes the records not written for readyKeep.
func (r *ReadyRuns) prune(dir *os.Root, now time.Time) {
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
