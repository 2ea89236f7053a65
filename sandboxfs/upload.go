package sandboxfs

import (
	"archive/tar"
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Upload copies the host file or directory tree hostPath (an absolute
// path; a link there is followed) into the sandbox, to be p: a directory
// that exists there gets the tree's files added, replacing files of the
// same names. Links in the sandbox on the way to p are followed as the
// sandbox user would, in a running sandbox, and refused in a stopped one
// (asuser.go). Missing parents of p are made. Everything is owned by the
// sandbox user and keeps its permission bits (not setuid, setgid or
// sticky). Links inside the tree are copied as links; sockets, pipes and
// devices are left out. The tree streams: it is never held in memory.
func (f *FS) Upload(ctx context.Context, hostPath, p string) (Copied, error) {
	p, err := Resolve("path", p)
	if err != nil {
		return Copied{}, err
	}
	src, info, err := hostSource(hostPath)
	if err != nil {
		return Copied{}, err
	}
	if err := f.refuseLinks(ctx, p); err != nil {
		return Copied{}, err
	}
	target, err := f.uploadTarget(ctx, p, info)
	if err != nil {
		return Copied{}, err
	}
	total, err := treeSize(src)
	if err != nil {
		return Copied{}, refuse("hostPath", "%v", err)
	}
	prog := newReporter(f.opts.Progress, total)
	err = f.put(ctx, target, true, func(tw *tar.Writer, name string) error {
		return writeTree(ctx, tw, src, name, prog)
	})
	prog.finish()
	return prog.done, err
}

// hostSource checks that hostPath is an absolute path to a file or a
// directory and resolves a link there.
func hostSource(hostPath string) (string, fs.FileInfo, error) {
	if !filepath.IsAbs(hostPath) {
		return "", nil, refuse("hostPath", "must be an absolute path; got %q", hostPath)
	}
	src, err := filepath.EvalSymlinks(hostPath)
	if err != nil {
		return "", nil, refuse("hostPath", "%v", err)
	}
	info, err := os.Stat(src)
	if err != nil {
		return "", nil, refuse("hostPath", "%v", err)
	}
	if !info.IsDir() && !info.Mode().IsRegular() {
		return "", nil, refuse("hostPath", "%s is %s: upload copies files and directories", hostPath, describeType(info.Mode()))
	}
	return src, info, nil
}

// uploadTarget is where an upload of a source like info goes: p, or the
// directory a link at p leads to. A file cannot replace a directory, nor
// the reverse.
func (f *FS) uploadTarget(ctx context.Context, p string, info fs.FileInfo) (string, error) {
	real, st, ok, err := f.follow(ctx, p)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return real, nil
	case info.IsDir() && !st.Mode.IsDir():
		return "", refuse("path", "%s is %s: a directory cannot replace it", p, describeType(st.Mode))
	case !info.IsDir() && !st.Mode.IsRegular():
		return "", refuse("path", "%s is %s: a file cannot replace it", p, describeType(st.Mode))
	}
	return real, nil
}

// treeSize adds up the sizes of the regular files under root, for the
// progress's total.
func treeSize(root string) (int64, error) {
	var total int64
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	return total, err
}

// writeTree writes the tree at src into tw, its root named name.
func writeTree(ctx context.Context, tw *tar.Writer, src, name string, prog *reporter) error {
	buf := make([]byte, copyBuffer)
	return filepath.WalkDir(src, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return refuse("hostPath", "%v", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, file)
		if err != nil {
			return err
		}
		entry := name
		if rel != "." {
			entry = path.Join(name, filepath.ToSlash(rel))
		}
		return writeEntry(tw, file, entry, d, buf, prog)
	})
}

// writeEntry writes one host file, directory or link.
func writeEntry(tw *tar.Writer, file, name string, d fs.DirEntry, buf []byte, prog *reporter) error {
	info, err := d.Info()
	if err != nil {
		return refuse("hostPath", "%v", err)
	}
	mode := int64(info.Mode().Perm())
	switch {
	case info.IsDir():
		return tw.WriteHeader(dirHeader(name, mode, info.ModTime()))
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(file)
		if err != nil {
			return refuse("hostPath", "%v", err)
		}
		prog.add(1, 0)
		return tw.WriteHeader(linkHeader(name, filepath.ToSlash(target), info.ModTime()))
	case info.Mode().IsRegular():
		return writeFile(tw, file, name, info, buf, prog)
	}
	return nil // a socket, a pipe or a device: left out
}

func writeFile(tw *tar.Writer, file, name string, info fs.FileInfo, buf []byte, prog *reporter) error {
	in, err := os.Open(file)
	if err != nil {
		return refuse("hostPath", "%v", err)
	}
	defer in.Close()
	if err := tw.WriteHeader(fileHeader(name, info.Size(), int64(info.Mode().Perm()), info.ModTime())); err != nil {
		return err
	}
	src := &hostReader{r: io.LimitReader(in, info.Size())}
	n, err := io.CopyBuffer(tw, src, buf)
	switch {
	case src.err != nil:
		return refuse("hostPath", "%v", src.err)
	case err != nil:
		return err // the upload stopped reading
	case n < info.Size():
		return refuse("hostPath", "%s shrank while it was copied", file)
	}
	prog.add(1, n)
	return nil
}

// hostReader keeps the error of reading a host file apart from that of
// writing the stream.
type hostReader struct {
	r   io.Reader
	err error
}

func (h *hostReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err != nil && err != io.EOF {
		h.err = err
	}
	return n, err
}
