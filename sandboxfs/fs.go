// Package sandboxfs moves files into and out of a sandbox's container
// (docs/protocol.md, Sandbox files) through the Docker engine's archive API, which
// works on a stopped container too: a file is written as a one-entry tar
// archive, read as one, and whole trees cross as tar streams, never held
// in memory.
//
// What comes out of a sandbox is hostile: whatever ran in it may have
// planted links, odd names or devices. A download extracts the stream into
// a fresh directory beside hostPath, refusing any entry that would land
// outside it, go through a symbolic link or make a link that leads out,
// and only then moves the result into place, so a refused download
// changes nothing on the host.
//
// The package declares the few engine calls it needs (Archive); it knows
// nothing of projects, JSON-RPC or go-dockerclient.
package sandboxfs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"
)

// Limits and conventions of the files methods.
const (
	// MaxIO caps the data of one write and one read (10 MiB).
	MaxIO = 10 << 20
	// Home is where relative paths in the sandbox start.
	Home = "/home/sandbox"
	// UID and GID own what is written: the sandbox user.
	UID, GID = 1000, 1000
	// maxNameBytes bounds a name or link target read from the sandbox
	// (PATH_MAX): Go's tar reader holds a PAX record up to 1 MiB, the
	// extraction nothing longer than this.
	maxNameBytes = 4096
)

// Archive is the part of the engine's archive API the files use. Every
// call works on a running or a stopped container.
type Archive interface {
	// StatPath describes path in the container without following a
	// final symbolic link (whose LinkTarget is then the fully resolved
	// path it leads to). A path that is not there is an ErrNotFound error.
	StatPath(ctx context.Context, id, path string) (PathStat, error)
	// DownloadArchive streams a tar archive of path (a file, or a
	// directory and everything under it), named from path's base name.
	// The caller closes it.
	DownloadArchive(ctx context.Context, id, path string) (io.ReadCloser, error)
	// UploadArchive extracts a tar archive into dir, an existing
	// directory, keeping the owners and modes of its entries. It refuses
	// to replace a directory with a non-directory or the reverse.
	UploadArchive(ctx context.Context, id, dir string, archive io.Reader) error
}

// PathStat is what the engine says of a path (Docker's
// X-Docker-Container-Path-Stat header).
type PathStat struct {
	Name       string      `json:"name"`
	Size       int64       `json:"size"`
	Mode       fs.FileMode `json:"mode"`
	Mtime      time.Time   `json:"mtime"`
	LinkTarget string      `json:"linkTarget"`
}

// Exec runs a command in the running sandbox as its user. It fails (with
// the caller's not-running error) when the sandbox is not running.
type Exec func(ctx context.Context, c Command) (ExecResult, error)

// Command is a command for Exec: its argv, what it reads (nil for
// nothing), how much of each output is kept, and how long it may take
// (0: until ctx ends).
type Command struct {
	Argv      []string
	Stdin     io.Reader
	MaxOutput int
	Timeout   time.Duration
}

// ExecResult is how a command of Exec ended.
type ExecResult struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	Truncated bool
}

// Copied counts what an upload or a download moved: files (and links),
// and the bytes of the files.
type Copied struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Options are what an FS needs besides the archive API.
type Options struct {
	// Running says the sandbox runs, so Exec may serve what the archive
	// API does badly (a directory listing) or not at all (remove).
	Running bool
	// Exec runs a command in the sandbox; nil means it cannot.
	Exec Exec
	// Progress hears how far an upload or download got, now and then and
	// at its end; total is 0 when unknown. May be nil.
	Progress func(done Copied, total int64)
}

// FS is the files of one sandbox's container.
type FS struct {
	docker Archive
	id     string
	opts   Options
}

// New returns the files of container id.
func New(docker Archive, id string, opts Options) *FS {
	return &FS{docker: docker, id: id, opts: opts}
}

// Resolve makes a path in the sandbox absolute and clean: relative paths
// start at Home. An empty path or one with a NUL byte is refused, naming
// field.
func Resolve(field, p string) (string, error) {
	switch {
	case p == "":
		return "", refuse(field, "must not be empty")
	case strings.IndexByte(p, 0) >= 0:
		return "", refuse(field, "must not contain a NUL byte")
	case !path.IsAbs(p):
		p = path.Join(Home, p)
	}
	return path.Clean(p), nil
}

// stat is StatPath with a missing path as ok=false.
func (f *FS) stat(ctx context.Context, p string) (st PathStat, ok bool, err error) {
	st, err = f.docker.StatPath(ctx, f.id, p)
	if isNotFound(err) {
		return PathStat{}, false, nil
	}
	return st, err == nil, err
}

// follow stats p, and if it is a symbolic link, what it leads to. It
// returns the path it found (the link's resolved target for a link),
// which may not exist (ok=false).
func (f *FS) follow(ctx context.Context, p string) (real string, st PathStat, ok bool, err error) {
	st, ok, err = f.stat(ctx, p)
	if err != nil || !ok || st.Mode&fs.ModeSymlink == 0 {
		return p, st, ok, err
	}
	real = st.LinkTarget
	if real == "" || !path.IsAbs(real) {
		return p, st, false, refuse("path", "%s is a symbolic link the engine did not resolve", p)
	}
	st, ok, err = f.stat(ctx, real)
	if err == nil && ok && st.Mode&fs.ModeSymlink != 0 {
		// The engine resolves every link on the way; a link again
		// means the target changed under us.
		return real, st, false, refuse("path", "%s leads to a symbolic link that changed while it was read", p)
	}
	return real, st, ok, err
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
