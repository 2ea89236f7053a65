package projectfs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"
)

// Forwards are the host ports each project's sandbox may reach
// (sandbox/ports/forward), kept under the user's own state directory: a
// project's files come with its repository, and a repository a stranger
// wrote must not be able to open the user's local database to the
// sandbox. One file per project, named by a hash of its path, which the
// file repeats.
type Forwards struct {
	dir string
}

// Forward is a host port reached from the sandbox: inside, localhost:Port
// is the host's 127.0.0.1:HostPort.
type Forward struct {
	Port     int `json:"port"`
	HostPort int `json:"hostPort"`
}

// forwardsFile is the file's form.
type forwardsFile struct {
	Project  string    `json:"project"`
	Forwards []Forward `json:"forwards"`
}

// NewForwards returns the forwards kept under stateDir; without a state
// directory none are kept, and a forward lasts while the process runs.
func NewForwards(stateDir string) Forwards {
	if stateDir == "" {
		return Forwards{}
	}
	return Forwards{dir: filepath.Join(stateDir, "forwards")}
}

func (f Forwards) name(project string) string {
	sum := sha256.Sum256([]byte(project))
	return hex.EncodeToString(sum[:8]) + ".json"
}

// Read returns the project's forwards, by port; none when nothing was
// kept. A file that is not a list of forwards for this project is an
// error (it is left as it is).
func (f Forwards) Read(project string) ([]Forward, error) {
	if f.dir == "" {
		return nil, nil
	}
	path := filepath.Join(f.dir, f.name(project))
	data, err := readBounded(path, MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var file forwardsFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, errCorrupt, err)
	}
	if file.Project != project {
		return nil, fmt.Errorf("%s: %w: it is for %q", path, errCorrupt, file.Project)
	}
	return file.Forwards, nil
}

// Change applies fn to the project's forwards as the file has them now and
// writes the result, under the file's lock, so that two processes of the
// user do not lose each other's changes. fn's error leaves the file alone.
// A corrupt file is moved aside (NAME.corrupt-TIME) and counts as empty.
func (f Forwards) Change(project string, fn func([]Forward) ([]Forward, error)) error {
	if f.dir == "" {
		_, err := fn(nil)
		return err
	}
	dir, err := openStateDir(f.dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	name := f.name(project)
	if unlock, err := lockWithin(filepath.Join(f.dir, name+".lock"), registryLockWait); err == nil {
		defer unlock()
	}
	list, err := f.Read(project)
	if errors.Is(err, errCorrupt) {
		// Not a list this process wrote: kept aside, never overwritten.
		if _, err = setAside(dir, name, time.Now()); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	if list, err = fn(slices.Clone(list)); err != nil {
		return err
	}
	if len(list) == 0 {
		if err := dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	slices.SortFunc(list, func(a, b Forward) int { return a.Port - b.Port })
	data, err := json.MarshalIndent(forwardsFile{Project: project, Forwards: list}, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, name, append(data, '\n'), 0o600)
}

// Dir is where the forwards are kept ("" for nowhere), for messages.
func (f Forwards) Dir() string { return f.dir }
