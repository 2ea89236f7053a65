package projectfs

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"time"
)

// Activity marks, under the state directory, when each project's sandbox
// was last used, so that every process of the user sees the others' use:
// two windows of the app run two sidecars, and the one the agent does not
// talk to must not stop the sandbox for idleness. A mark is a file whose
// modification time is the last use; nothing else is in it.
type Activity struct {
	dir string
}

// NewActivity returns the marks under stateDir; without a state directory
// there are none, and each process knows only its own use.
func NewActivity(stateDir string) Activity {
	if stateDir == "" {
		return Activity{}
	}
	return Activity{dir: filepath.Join(stateDir, "activity")}
}

func (a Activity) path(project string) string {
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(a.dir, hex.EncodeToString(sum[:8]))
}

// Touch records a use of the project's sandbox at now.
func (a Activity) Touch(project string, now time.Time) error {
	if a.dir == "" {
		return nil
	}
	path := a.path(project)
	err := os.Chtimes(path, now, now)
	if !missing(err) {
		return err
	}
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return os.Chtimes(path, now, now)
}

// Last is the last use any process recorded, or the zero time.
func (a Activity) Last(project string) time.Time {
	if a.dir == "" {
		return time.Time{}
	}
	info, err := os.Stat(a.path(project))
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// Forget drops the project's mark, for a sandbox that is gone.
func (a Activity) Forget(project string) {
	if a.dir != "" {
		os.Remove(a.path(project))
	}
}
