package sandboxfs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// defaultMode is a new file's mode when the write gives none.
const defaultMode = 0o644

// Stat describes path without following a final link; nil when nothing
// is there.
func (f *FS) Stat(ctx context.Context, p string) (*Entry, error) {
	p, err := Resolve("path", p)
	if err != nil {
		return nil, err
	}
	st, ok, err := f.stat(ctx, p)
	if err != nil || !ok {
		return nil, err
	}
	e := entryOfStat(st)
	return &e, nil
}

// IsDir says whether p is a directory, or a link to one.
func (f *FS) IsDir(ctx context.Context, p string) (bool, error) {
	p, err := Resolve("path", p)
	if err != nil {
		return false, err
	}
	_, st, ok, err := f.follow(ctx, p)
	return ok && st.Mode.IsDir(), err
}

// ReadResult is a piece of a file: Size is the whole file's, EOF says
// the piece reaches its end.
type ReadResult struct {
	Data []byte
	Size int64
	EOF  bool
}

// Read reads up to length bytes (MaxIO when 0) of the file at p from
// offset on, following links.
func (f *FS) Read(ctx context.Context, p string, offset, length int64) (ReadResult, error) {
	switch {
	case offset < 0:
		return ReadResult{}, refuse("offset", "must not be negative")
	case length < 0 || length > MaxIO:
		return ReadResult{}, refuse("length", "must be from 0 to %d (10 MiB); read the rest by offset", MaxIO)
	case length == 0:
		length = MaxIO
	}
	real, err := f.regularFile(ctx, p)
	if err != nil {
		return ReadResult{}, err
	}
	rc, err := f.docker.DownloadArchive(ctx, f.id, real)
	if err != nil {
		return ReadResult{}, err
	}
	defer rc.Close()
	return readPiece(tar.NewReader(rc), real, offset, length)
}

// regularFile resolves p to a regular file, following links.
func (f *FS) regularFile(ctx context.Context, p string) (string, error) {
	p, err := Resolve("path", p)
	if err != nil {
		return "", err
	}
	real, st, ok, err := f.follow(ctx, p)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", &NotFoundError{Path: p}
	case !st.Mode.IsRegular():
		return "", refuse("path", "%s is %s, not a file", p, describeType(st.Mode))
	}
	return real, nil
}

// readPiece reads the archive's one file from offset on. The archive
// skips what comes before offset: it streams, it cannot seek.
func readPiece(tr *tar.Reader, p string, offset, length int64) (ReadResult, error) {
	h, err := tr.Next()
	if err != nil {
		return ReadResult{}, fmt.Errorf("read archive of %s: %w", p, err)
	}
	if h.Typeflag != tar.TypeReg {
		return ReadResult{}, refuse("path", "%s changed while it was read: it is no longer a file", p)
	}
	res := ReadResult{Size: h.Size}
	if offset >= h.Size {
		res.EOF = true
		return res, nil
	}
	if _, err := io.CopyN(io.Discard, tr, offset); err != nil {
		return ReadResult{}, fmt.Errorf("read %s: %w", p, err)
	}
	n := min(length, h.Size-offset)
	res.Data = make([]byte, n)
	if _, err := io.ReadFull(tr, res.Data); err != nil {
		return ReadResult{}, fmt.Errorf("read %s: %w", p, err)
	}
	res.EOF = offset+n >= h.Size
	return res, nil
}

// WriteRequest is a file to write whole.
type WriteRequest struct {
	Path string
	Data []byte
	// Mode is the new file's permission bits; nil keeps an existing
	// file's, or is 0644 for a new one.
	Mode          *int
	CreateParents bool
}

// Written is where a write went (links followed) and how much it wrote.
type Written struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// Write replaces (or makes) the file at req.Path with req.Data, owned by
// the sandbox user. A link at req.Path, or on its way, is followed as the
// sandbox user would in a running sandbox, and refused in a stopped one
// (asuser.go).
func (f *FS) Write(ctx context.Context, req WriteRequest) (Written, error) {
	p, err := Resolve("path", req.Path)
	if err != nil {
		return Written{}, err
	}
	if len(req.Data) > MaxIO {
		return Written{}, refuse("data", "is %d bytes, more than the %d (10 MiB) of one write", len(req.Data), MaxIO)
	}
	if req.Mode != nil && (*req.Mode < 0 || *req.Mode > 0o777) {
		return Written{}, refuse("mode", "must be permission bits from 0 to 0777 (511); got %d", *req.Mode)
	}
	if err := f.refuseLinks(ctx, p); err != nil {
		return Written{}, err
	}
	target, mode, err := f.writeTarget(ctx, p, req.Mode)
	if err != nil {
		return Written{}, err
	}
	err = f.put(ctx, target, req.CreateParents, func(tw *tar.Writer, name string) error {
		if err := tw.WriteHeader(fileHeader(name, int64(len(req.Data)), mode, time.Now())); err != nil {
			return err
		}
		_, err := io.Copy(tw, bytes.NewReader(req.Data))
		return err
	})
	return Written{Path: target, Size: int64(len(req.Data))}, err
}

// writeTarget is where a write of p goes (a link followed) and the mode
// it gets.
func (f *FS) writeTarget(ctx context.Context, p string, mode *int) (string, int64, error) {
	real, st, ok, err := f.follow(ctx, p)
	switch {
	case err != nil:
		return "", 0, err
	case ok && !st.Mode.IsRegular():
		return "", 0, refuse("path", "%s is %s, not a file", p, describeType(st.Mode))
	case mode != nil:
		return real, int64(*mode), nil
	case ok:
		return real, int64(st.Mode.Perm()), nil
	}
	return real, defaultMode, nil
}

// Mkdir makes the directory p and its parents; one that exists is fine.
// Links on its way are treated as Write treats them.
func (f *FS) Mkdir(ctx context.Context, p string) (string, error) {
	p, err := Resolve("path", p)
	if err != nil {
		return "", err
	}
	if err := f.refuseLinks(ctx, p); err != nil {
		return "", err
	}
	real, st, ok, err := f.follow(ctx, p)
	switch {
	case err != nil:
		return "", err
	case ok && st.Mode.IsDir():
		return p, nil
	case ok:
		return "", refuse("path", "%s exists and is %s", p, describeType(st.Mode))
	}
	return p, f.put(ctx, real, true, func(tw *tar.Writer, name string) error {
		return tw.WriteHeader(dirHeader(name, 0o755, time.Now()))
	})
}

// Remove deletes p (a link itself, not what it leads to), and with
// recursive a directory with everything in it. The archive API cannot
// delete, so this runs rm in the sandbox as its user: it needs a running
// sandbox, and removes what that user may. Nothing there is removed=false.
func (f *FS) Remove(ctx context.Context, p string, recursive bool) (bool, error) {
	p, err := Resolve("path", p)
	if err != nil {
		return false, err
	}
	if p == "/" || p == Home {
		return false, refuse("path", "refusing to remove %s", p)
	}
	st, ok, err := f.stat(ctx, p)
	if err != nil || !ok {
		return false, err
	}
	argv := []string{"rm", "-f", "--", p}
	switch {
	case recursive:
		argv = []string{"rm", "-rf", "--", p}
	case st.Mode.IsDir():
		argv = []string{"rmdir", "--", p}
	}
	return true, f.run(ctx, argv)
}

// run runs a removal and explains its failure.
func (f *FS) run(ctx context.Context, argv []string) error {
	if f.opts.Exec == nil {
		return errors.New("remove needs a running sandbox")
	}
	res, err := f.opts.Exec(ctx, Command{Argv: argv, MaxOutput: maxStderr, Timeout: execTimeout})
	if err != nil {
		return fmt.Errorf("remove needs a running sandbox: %w", err)
	}
	if res.ExitCode == 0 {
		return nil
	}
	msg := string(bytes.TrimSpace(res.Stderr))
	if argv[0] == "rmdir" {
		return refuse("recursive", "the directory %s was not removed (%s): one that is not empty needs recursive", argv[2], msg)
	}
	return refuse("path", "%s was not removed (%s)", argv[len(argv)-1], msg)
}
