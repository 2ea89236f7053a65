// Package projectfs owns a project's files under .pilot/ and the sidecar's
// per-user state beside them: the canonical project path, sandbox.json,
// settings.json (the agent-tools switch and the sandbox settings, with their
// validation), atomic writes that never lose what a user wrote, the
// per-project lock files, activity marks and the Registry of projects
// under the XDG state directory, and the user's own lifecycle policy
// (config.json under the XDG config directory, UserConfig).
//
// It knows nothing of Docker, containers or the desktop: it reads and
// writes files, and says precisely what is wrong with one (FileError,
// ConfigError, PathError).
package projectfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrInvalidPath: a project path is not an absolute path to an existing
// directory. See PathError.
var ErrInvalidPath = errors.New("invalid project path")

// PathError says why a project path was refused.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("project path %q: %s", e.Path, e.Reason) }

func (e *PathError) Unwrap() error { return ErrInvalidPath }

// reasonMissing is the PathError of a path that does not exist.
const reasonMissing = "does not exist"

// Canonical turns a client's project path into the key the sidecar uses:
// absolute, cleaned and symlink-resolved, so "/a/b", "/a/b/" and a symlink
// to it name one project. The path must name an existing directory.
func Canonical(path string) (string, error) {
	switch {
	case path == "":
		return "", &PathError{Path: path, Reason: "must not be empty"}
	case strings.ContainsRune(path, 0):
		return "", &PathError{Path: path, Reason: "must not contain NUL"}
	case !filepath.IsAbs(path):
		return "", &PathError{Path: path, Reason: "must be an absolute path"}
	}
	resolved, err := filepath.EvalSymlinks(filepath.Clean(path))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &PathError{Path: path, Reason: reasonMissing}
		}
		return "", &PathError{Path: path, Reason: err.Error()}
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return "", &PathError{Path: path, Reason: err.Error()}
	}
	if !info.IsDir() {
		return "", &PathError{Path: path, Reason: "is not a directory"}
	}
	return resolved, nil
}

// Dir is the per-project directory the sidecar and the desktop app share.
const Dir = ".pilot"

// CanonicalOrGone is Canonical for a project that may have been deleted
// while its sandbox lives on: a path that does not exist is cleaned, and
// the part of it that still exists is symlink-resolved, so that it names
// the project the way Canonical did while it existed (as far as can
// still be known). Other refusals are Canonical's.
func CanonicalOrGone(path string) (string, error) {
	project, err := Canonical(path)
	var pe *PathError
	if err == nil || !errors.As(err, &pe) || pe.Reason != reasonMissing {
		return project, err
	}
	clean := filepath.Clean(path)
	var rest []string
	for dir := clean; ; dir = filepath.Dir(dir) {
		if resolved, err := filepath.EvalSymlinks(dir); err == nil {
			slices.Reverse(rest)
			return filepath.Join(append([]string{resolved}, rest...)...), nil
		}
		if dir == filepath.Dir(dir) {
			return clean, nil
		}
		rest = append(rest, filepath.Base(dir))
	}
}

// Gone says whether a canonical project directory no longer exists.
func Gone(project string) bool {
	_, err := os.Stat(project)
	return missing(err)
}
