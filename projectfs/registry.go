package projectfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Registry remembers, under the XDG state directory, which projects have had
// a sandbox, so that startup reconciliation can clean up the state files of a
// project whose container was removed while the sidecar was not running.
// (Containers themselves are found by label.)
type Registry struct {
	path string

	mu       sync.Mutex // guards projects and the file
	projects []string
}

// OpenRegistry reads the registry under stateDir. It returns a usable,
// empty registry with the error when the file cannot be read.
func OpenRegistry(stateDir string) (*Registry, error) {
	r := &Registry{path: filepath.Join(stateDir, "projects.json")}
	projects, err := r.read()
	r.projects = projects
	return r, err
}

// Path is the registry's file.
func (r *Registry) Path() string { return r.path }

// read loads the file; a missing one is an empty list.
func (r *Registry) read() ([]string, error) {
	data, err := readBounded(r.path, MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var file struct {
		Projects []string `json:"projects"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, errors.Join(errCorrupt, err)
	}
	return file.Projects, nil
}

// List is the projects the registry knows, sorted.
func (r *Registry) List() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.projects)
}

// Add records that project has a sandbox.
func (r *Registry) Add(project string) error {
	return r.change(func(list []string) []string {
		if slices.Contains(list, project) {
			return list
		}
		list = append(list, project)
		slices.Sort(list)
		return list
	})
}

// Remove forgets project.
func (r *Registry) Remove(project string) error {
	return r.change(func(list []string) []string {
		return slices.DeleteFunc(list, func(p string) bool { return p == project })
	})
}

// registryLockWait bounds the wait for another process's Registry write,
// which takes milliseconds.
const registryLockWait = 5 * time.Second

// change applies fn to the list as the file has it now, under the file's
// lock, so that two processes of one user (two sidecars, a command beside
// a sidecar) add and remove projects without losing each other's.
func (r *Registry) change(fn func([]string) []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return err
	}
	if unlock, err := lockWithin(r.path+".lock", registryLockWait); err == nil {
		defer unlock()
	}
	if current, err := r.read(); err == nil {
		r.projects = current
	}
	next := fn(slices.Clone(r.projects))
	if slices.Equal(next, r.projects) {
		return nil
	}
	r.projects = next
	return r.save()
}

// save writes the file; r.mu must be held.
func (r *Registry) save() error {
	data, err := json.MarshalIndent(struct {
		Projects []string `json:"projects"`
	}{r.projects}, "", "  ")
	if err != nil {
		return err
	}
	dir, err := openStateDir(filepath.Dir(r.path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return writeFileAtomic(dir, filepath.Base(r.path), append(data, '\n'), 0o600)
}

// readBounded reads a file of the user's own state, which is at most max
// bytes: a larger one is an error, and is not read past max.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %s: not read", path, sizeOf(max))
	}
	return data, err
}

// lockWithin takes the lock file at path, waiting up to wait for another
// process to let it go, and returns its release.
func lockWithin(path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := tryFlock(f)
		switch {
		case ok:
			return func() { unflock(f); f.Close() }, nil
		case err != nil || time.Now().After(deadline):
			f.Close()
			return nil, fmt.Errorf("lock %s: %v", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
