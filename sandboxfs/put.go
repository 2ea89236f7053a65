package sandboxfs

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"time"
)

// put makes target in the sandbox from one tar stream: body writes
// target's entries under the name it is given. In a running sandbox the
// stream is extracted by the sandbox user (asuser.go); in a stopped one
// the engine extracts it, as root. The stream goes to the
// deepest directory that exists on the way to target; the directories
// missing between it and target's parent are made first in the same
// stream (owned by the sandbox user, mode 0755) when makeParents, and are
// an ErrNotFound error otherwise.
func (f *FS) put(ctx context.Context, target string, makeParents bool, body func(tw *tar.Writer, name string) error) error {
	base, missing, err := f.ancestor(ctx, path.Dir(target), makeParents)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		// Ends when the stream is written or the upload stops reading
		// (pr closed below).
		err := writeWithParents(pw, missing, path.Base(target), body)
		pw.CloseWithError(err)
		wrote <- err
	}()
	if f.asUser() {
		err = f.untar(ctx, base, pr)
	} else {
		err = f.docker.UploadArchive(ctx, f.id, base, pr)
	}
	pr.CloseWithError(errUploadEnded)
	// A failure to read what is sent (a host file) is the cause of the
	// upload's failure, which would only say the stream broke.
	if werr := <-wrote; werr != nil && !errors.Is(werr, errUploadEnded) && !errors.Is(werr, io.ErrClosedPipe) {
		return werr
	}
	return err
}

// errUploadEnded stops the writing of an archive the engine no longer
// reads.
var errUploadEnded = errors.New("the upload ended")

// writeWithParents writes the archive: the missing directories, then body.
// The archive goes out in pieces of streamBuffer: Go's transport sends
// each read of a request body as an HTTP chunk and flushes it, so,
// unbuffered, each header and each small file would be a write to the
// engine's socket of its own (docker cp buffers its archive too).
func writeWithParents(w io.Writer, missing []string, name string, body func(tw *tar.Writer, name string) error) error {
	bw := bufio.NewWriterSize(w, streamBuffer)
	tw := tar.NewWriter(bw)
	for i := range missing {
		if err := tw.WriteHeader(dirHeader(path.Join(missing[:i+1]...), 0o755, time.Now())); err != nil {
			return err
		}
	}
	if err := body(tw, path.Join(append(slices.Clone(missing), name)...)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// streamBuffer is how much of an upload's archive is sent at a time.
const streamBuffer = 256 << 10

// ancestor finds the deepest existing directory on the way to dir (dir
// itself if it exists), following links, and the names of the
// directories missing below it.
func (f *FS) ancestor(ctx context.Context, dir string, makeParents bool) (string, []string, error) {
	var missing []string
	for {
		real, st, ok, err := f.follow(ctx, dir)
		switch {
		case err != nil:
			return "", nil, err
		case ok && !st.Mode.IsDir():
			return "", nil, refuse("path", "%s is not a directory", dir)
		case ok:
			return real, missing, nil
		case !makeParents:
			return "", nil, &NotFoundError{Path: dir}
		case dir == "/":
			return "", nil, errors.New("the sandbox has no root directory")
		}
		missing = append([]string{path.Base(dir)}, missing...)
		dir = path.Dir(dir)
	}
}

func dirHeader(name string, mode int64, mtime time.Time) *tar.Header {
	return &tar.Header{
		Typeflag: tar.TypeDir, Name: name + "/", Mode: mode,
		Uid: UID, Gid: GID, ModTime: mtime.Truncate(time.Second),
	}
}

func fileHeader(name string, size, mode int64, mtime time.Time) *tar.Header {
	return &tar.Header{
		Typeflag: tar.TypeReg, Name: name, Size: size, Mode: mode,
		Uid: UID, Gid: GID, ModTime: mtime.Truncate(time.Second),
	}
}

func linkHeader(name, target string, mtime time.Time) *tar.Header {
	return &tar.Header{
		Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777,
		Uid: UID, Gid: GID, ModTime: mtime.Truncate(time.Second),
	}
}

// describeType names a kind of file for a message.
func describeType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a file"
	default:
		return fmt.Sprintf("a special file (%v)", m.Type())
	}
}
