package sandboxfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Download copies the file or tree p (a link there is followed) out of
// the sandbox to be hostPath (an absolute path whose directory exists): a
// directory there gets the tree merged into it. It never writes outside
// hostPath nor through a link, makes only links that stay inside it,
// refuses devices, pipes and anything else but files, directories and
// links, keeps permission bits but not setuid, setgid or sticky, and
// replaces an existing file only with overwrite. A refused download
// changes nothing: the archive is extracted beside hostPath first, and
// moved into place once all of it passed.
func (f *FS) Download(ctx context.Context, p, hostPath string, overwrite bool) (Copied, error) {
	p, err := Resolve("path", p)
	if err != nil {
		return Copied{}, err
	}
	real, st, ok, err := f.follow(ctx, p)
	switch {
	case err != nil:
		return Copied{}, err
	case !ok:
		return Copied{}, &NotFoundError{Path: p}
	case !st.Mode.IsDir() && !st.Mode.IsRegular():
		return Copied{}, refuse("path", "%s is %s: download copies files and directories", p, describeType(st.Mode))
	}
	if err := checkHostDest(hostPath, st.Mode.IsDir(), overwrite); err != nil {
		return Copied{}, err
	}
	rc, err := f.docker.DownloadArchive(ctx, f.id, real)
	if err != nil {
		return Copied{}, err
	}
	defer rc.Close()
	prog := newReporter(f.opts.Progress, 0)
	done, err := extract(ctx, rc, hostPath, overwrite, prog)
	if err == nil {
		prog.finish()
	}
	return done, err
}

// checkHostDest refuses, before anything is read from the sandbox, a
// download that could not go to hostPath: a file over a directory or the
// reverse, or over a file without overwrite.
func checkHostDest(hostPath string, isDir, overwrite bool) error {
	parent, name, err := hostDest(hostPath)
	if err != nil {
		return err
	}
	have, err := os.Lstat(filepath.Join(parent, name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return refuse("hostPath", "%v", err)
	case isDir && !have.IsDir():
		return refuse("hostPath", "%s is %s; the download is a directory", hostPath, describeType(have.Mode()))
	case !isDir && have.IsDir():
		return refuse("hostPath", "%s is a directory; the download is a file (name the file to write)", hostPath)
	case !isDir && !overwrite:
		return refuse("hostPath", "%s exists: set overwrite to replace it", hostPath)
	}
	return nil
}
