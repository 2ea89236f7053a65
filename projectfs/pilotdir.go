package projectfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A project's .pilot may come with a cloned repository, a stranger's: a
// link in it could point at a device that never ends (/dev/zero), the
// sidecar's own stdin, or the user's files (~/.docker/config.json, VS
// Code's settings directory). So .pilot and its files are used only as a
// real directory and regular files inside the project, of at most
// MaxFileSize, opened beneath a handle on the project directory (os.Root)
// that no link leads out of; and files are written only by creating a new
// file beside them and renaming it into place, never by writing through
// what is there.

// MaxFileSize bounds every file of .pilot the sidecar reads.
const MaxFileSize = 1 << 20

// pilotDir is the project's .pilot directory, opened.
type pilotDir struct {
	root *os.Root // .pilot itself
	dir  string   // its path, for messages
}

// refusal is why an entry of the project is not used.
type refusal struct{ why string }

func (r *refusal) Error() string { return r.why }

// openPilot opens the project's .pilot directory, making it first when
// create is set and it is missing. A .pilot that is a link is a refusal,
// one that is missing (or not a directory) fs.ErrNotExist (or ENOTDIR).
func openPilot(project string, create bool) (*pilotDir, error) {
	root, err := os.OpenRoot(project)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	info, err := root.Lstat(Dir)
	if create && errors.Is(err, fs.ErrNotExist) {
		if err := root.Mkdir(Dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		info, err = root.Lstat(Dir)
	}
	dir := filepath.Join(project, Dir)
	switch {
	case err != nil:
		return nil, err
	case info.Mode()&fs.ModeSymlink != 0:
		return nil, &refusal{fmt.Sprintf("%s is a symbolic link%s, not a directory of the project", dir, linkTarget(root, Dir))}
	case !info.IsDir():
		return nil, syscall.ENOTDIR
	}
	pilot, err := root.OpenRoot(Dir)
	if err != nil {
		return nil, err
	}
	// Lstat and open are two steps: what was opened must be what was seen.
	if opened, err := pilot.Stat("."); err != nil || !os.SameFile(opened, info) {
		pilot.Close()
		return nil, &refusal{dir + " changed while it was opened"}
	}
	return &pilotDir{root: pilot, dir: dir}, nil
}

func (p *pilotDir) Close() { p.root.Close() }

func (p *pilotDir) path(name string) string { return filepath.Join(p.dir, name) }

// linkTarget is " (to TARGET)" for a link, for a message.
func linkTarget(root *os.Root, name string) string {
	target, err := root.Readlink(name)
	if err != nil {
		return ""
	}
	return " (to " + target + ")"
}

// check says whether the entry info of name may be read or replaced: a
// regular file of at most MaxFileSize. A directory is not refused: it is
// unreadable, and can be set aside like a corrupt file.
func (p *pilotDir) check(name string, info fs.FileInfo) error {
	mode := info.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		return &refusal{"it is a symbolic link" + linkTarget(p.root, name)}
	case mode.IsDir(), mode.IsRegular() && info.Size() <= MaxFileSize:
		return nil
	case mode.IsRegular():
		return &refusal{fmt.Sprintf("it is %s, larger than %s", sizeOf(info.Size()), sizeOf(MaxFileSize))}
	}
	return &refusal{"it is " + kindOf(mode)}
}

// kindOf names a file type that is neither a regular file, a directory nor
// a link.
func kindOf(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// sizeOf is how a message puts a size.
func sizeOf(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// lstat returns what name is, and the refusal if it must not be used.
func (p *pilotDir) lstat(name string) (fs.FileInfo, error) {
	info, err := p.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	return info, p.check(name, info)
}

// read returns the contents of name, a regular file of at most
// MaxFileSize; anything else is a refusal, a directory a read error.
func (p *pilotDir) read(name string) ([]byte, error) {
	info, err := p.lstat(name)
	if err != nil {
		return nil, err
	}
	// Non-blocking, so that a pipe put there since the Lstat cannot hold
	// the open; it is refused just after.
	f, err := p.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(opened, info) {
		return nil, &refusal{"it changed while it was opened"}
	}
	if err := p.check(name, opened); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err == nil && len(data) > MaxFileSize {
		return nil, &refusal{"it grew past " + sizeOf(MaxFileSize) + " while it was read"}
	}
	return data, err
}

// readPilotFile reads .pilot/name of the project. A file that is missing
// is fs.ErrNotExist (or ENOTDIR); one that is refused, or cannot be read,
// a FileError.
func readPilotFile(project, name string) ([]byte, error) {
	pilot, err := openPilot(project, false)
	if err != nil {
		return nil, fileErrorOf(filepath.Join(project, Dir, name), err, FileUnreadable)
	}
	defer pilot.Close()
	data, err := pilot.read(name)
	if err != nil {
		return nil, fileErrorOf(pilot.path(name), err, FileUnreadable)
	}
	return data, nil
}

// fileErrorOf turns an error about path into a FileError: a refusal, or
// the problem given. A missing file is returned as it is.
func fileErrorOf(path string, err error, problem FileProblem) error {
	var r *refusal
	switch {
	case errors.As(err, &r):
		return &FileError{Path: path, Problem: FileRefused, Err: r}
	case missing(err) && problem == FileUnreadable:
		return err
	}
	return &FileError{Path: path, Problem: problem, Err: bare(err)}
}
