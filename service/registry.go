package service

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// registry remembers, under the XDG state directory, which projects have had
// a sandbox, so that startup reconciliation can clean up the state files of a
// project whose container was removed while the sidecar was not running.
// (Containers themselves are found by label.)
type registry struct {
	path string

	mu       sync.Mutex // guards projects and the file
	projects []string
}

func openRegistry(stateDir string) (*registry, error) {
	r := &registry{path: filepath.Join(stateDir, "projects.json")}
	data, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	var file struct {
		Projects []string `json:"projects"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return r, errors.Join(errCorrupt, err)
	}
	r.projects = file.Projects
	return r, nil
}

func (r *registry) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.projects)
}

func (r *registry) add(project string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Contains(r.projects, project) {
		return nil
	}
	r.projects = append(r.projects, project)
	slices.Sort(r.projects)
	return r.save()
}

func (r *registry) remove(project string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.projects, project)
	if i < 0 {
		return nil
	}
	r.projects = slices.Delete(r.projects, i, i+1)
	return r.save()
}

// save writes the file; r.mu must be held.
func (r *registry) save() error {
	data, err := json.MarshalIndent(struct {
		Projects []string `json:"projects"`
	}{r.projects}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return err
	}
	return writeFileAtomic(r.path, append(data, '\n'), 0o600)
}
