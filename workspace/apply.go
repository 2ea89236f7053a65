package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// Apply is the only code that writes the host project (docs/tasks.md,
// "Apply"). In order, and writing nothing until the last step:
//
//  1. It reads the change (git's raw diff of commit against base) and
//     checks every path: relative and clean, not in .git or .pilot.
//  2. It compares every path with the host's file: the content, as a blob
//     id, must be the base's (or already the task's: nothing to do), a
//     path the task adds must not exist, and no directory on the way may
//     be a link. Any difference refuses the whole apply with a
//     *ConflictError naming every such path.
//  3. It fetches each new content (git cat-file in the sandbox), checks it
//     against its blob id, and writes it to a temporary file in the
//     deepest existing directory on the way to its path (a link target
//     must stay in the project). A failure removes them all: a read-only
//     project, a full disk, a hostile stream change nothing.
//  4. It removes what the task deleted and renames each temporary file
//     into place. Only here can a crash leave the change half made: some
//     files new, some old, and temporary files named .pilot-apply-*.
//     Applying again finishes it (a file already as the task made it is
//     not a conflict).

// applyTempPrefix starts the names of apply's temporary files.
const applyTempPrefix = ".pilot-apply-"

// Apply writes the change of commit against base (all of it, or the paths
// named) into the project, and returns the paths the project now has as the
// task made them.
func (w *Workspace) Apply(ctx context.Context, base, commit string, paths []string) ([]string, error) {
	changes, err := w.readChange(ctx, base, commit)
	if err != nil {
		return nil, err
	}
	if changes, err = pick(changes, paths); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(w.project)
	if err != nil {
		return nil, &WriteError{Path: w.project, Err: fmt.Errorf("the project %s cannot be opened (moved or removed?); nothing was written: %w", w.project, err)}
	}
	defer root.Close()
	todo, err := compare(root, changes)
	if err != nil {
		return nil, err
	}
	staged, err := w.stage(ctx, root, todo)
	if err != nil {
		return nil, err
	}
	if err := commitStaged(root, todo, staged); err != nil {
		return nil, err
	}
	applied := make([]string, len(changes))
	for i, c := range changes {
		applied[i] = c.path
	}
	return applied, nil
}

// readChange reads the raw diff of commit against base from the sandbox.
func (w *Workspace) readChange(ctx context.Context, base, commit string) ([]change, error) {
	if err := checkIDs(base, commit); err != nil {
		return nil, err
	}
	res, err := w.sandbox.Exec(ctx, Command{Argv: w.command("raw", base, commit), MaxOutput: maxRaw, Timeout: programTimeout})
	if err != nil {
		return nil, err
	}
	if err := programError("raw", res); err != nil {
		return nil, err
	}
	return parseRaw(res.Stdout)
}

// pick keeps the changes of the paths named (all of them without names).
func pick(changes []change, paths []string) ([]change, error) {
	if paths == nil {
		return changes, nil
	}
	byPath := make(map[string]change, len(changes))
	for _, c := range changes {
		byPath[c.path] = c
	}
	out := make([]change, 0, len(paths))
	for _, p := range paths {
		c, ok := byPath[p]
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrBadPath, quote(p))
		}
		out = append(out, c)
		delete(byPath, p)
	}
	return out, nil
}

// checkPath refuses a path apply must never write.
func checkPath(p string) error {
	switch {
	case p == "" || len(p) > 4096:
		return &UnsafeError{Path: p, Reason: "is empty or too long"}
	case strings.ContainsRune(p, 0):
		return &UnsafeError{Path: p, Reason: "holds a NUL byte"}
	case path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return &UnsafeError{Path: p, Reason: "is absolute"}
	case path.Clean(p) != p:
		return &UnsafeError{Path: p, Reason: "is not a clean relative path"}
	case runtime.GOOS == "windows" && strings.ContainsAny(p, `\:`):
		return &UnsafeError{Path: p, Reason: "holds a character Windows reads as a separator"}
	}
	for _, part := range strings.Split(p, "/") {
		switch {
		case part == "..":
			return &UnsafeError{Path: p, Reason: "leaves the project"}
		case strings.EqualFold(part, ".git") || part == ".pilot":
			return &UnsafeError{Path: p, Reason: "is in " + part}
		}
	}
	return nil
}

// compare checks every change against the host and returns those that
// still need writing (a file already as the task made it needs none).
func compare(root *os.Root, changes []change) ([]change, error) {
	deleting := make(map[string]bool)
	for _, c := range changes {
		if c.deleted() {
			deleting[c.path] = true
		}
	}
	var todo []change
	var conflicts []string
	for _, c := range changes {
		done, err := hostState(root, c, deleting)
		switch {
		case errors.Is(err, errConflict):
			conflicts = append(conflicts, c.path)
		case err != nil:
			return nil, err
		case !done:
			todo = append(todo, c)
		}
	}
	if len(conflicts) > 0 {
		return nil, &ConflictError{Paths: conflicts}
	}
	return todo, nil
}

// errConflict: the host's file is neither the base's nor the task's.
var errConflict = errors.New("conflict")

// hostState says whether the host already has c's new side (done), and
// fails with errConflict unless it has its old side.
func hostState(root *os.Root, c change, deleting map[string]bool) (done bool, err error) {
	if err := checkParents(root, c.path, deleting); err != nil {
		return false, err
	}
	blob, mode, err := hostBlob(root, c.path)
	if err != nil {
		return false, err
	}
	switch {
	case blob == blobOfSide(c.newMode, c.newBlob) && sameMode(mode, c.newMode):
		return true, nil
	case blob == blobOfSide(c.oldMode, c.oldBlob):
		return false, nil
	}
	return false, errConflict
}

// blobOfSide is a side's blob id for comparing with a host file: "" for a
// side without the file.
func blobOfSide(mode, blob string) string {
	if mode == modeNone {
		return ""
	}
	return blob
}

// sameMode says a host file's mode is the one git's mode names (only the
// kind and the executable bit count).
func sameMode(host fs.FileMode, mode string) bool {
	switch mode {
	case modeLink:
		return host&fs.ModeSymlink != 0
	case modeExec:
		return host.IsRegular() && host&0o100 != 0
	case modeFile:
		return host.IsRegular() && host&0o100 == 0
	}
	return true // none: no file, nothing to compare
}

// hostBlob is the blob id and mode of the host's path: "" for none. A
// directory (or a device) where the change has a file is a conflict.
func hostBlob(root *os.Root, p string) (string, fs.FileMode, error) {
	name := filepath.FromSlash(p)
	info, err := root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return "", 0, nil // a parent is a file the change deletes
	case err != nil:
		return "", 0, fmt.Errorf("read the project's %s: %w", p, err)
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := root.Readlink(name)
		return linkBlob(target), info.Mode(), err
	case !info.Mode().IsRegular():
		return "", 0, errConflict
	}
	f, err := root.Open(name)
	if err != nil {
		return "", 0, fmt.Errorf("read the project's %s: %w", p, err)
	}
	defer f.Close()
	blob, err := readerBlob(f, info.Size())
	return blob, info.Mode(), err
}

// checkParents refuses a path with a link among its directories: apply
// never writes through a link. A file where a directory should be is a
// conflict, unless the change deletes that file.
func checkParents(root *os.Root, p string, deleting map[string]bool) error {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		info, err := root.Lstat(filepath.FromSlash(dir))
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		case err != nil:
			return err
		case info.Mode()&fs.ModeSymlink != 0:
			return &UnsafeError{Path: p, Reason: "has a link on its way in the project (" + dir + "): apply writes through no link"}
		case !info.IsDir() && !deleting[dir]:
			return errConflict
		}
	}
	return nil
}
