package projectfs

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// tempPrefix starts the names writeFileAtomic gives its temporary files.
func tempPrefix(name string) string { return "." + name + ".tmp-" }

// writeFileAtomic replaces name in dir with data so that a reader (or a
// crash) sees the old file or the new one, never a part: a new temporary
// file beside it (never one that was there), fsync, rename, fsync of the
// directory. A link in name's place is replaced, never written through.
func writeFileAtomic(dir *os.Root, name string, data []byte, perm os.FileMode) error {
	tmp, tmpName, err := createTemp(dir, name)
	if err != nil {
		return err
	}
	defer dir.Remove(tmpName) // fails once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := dir.Rename(tmpName, name); err != nil {
		return err
	}
	return syncDir(dir)
}

// createTemp makes a new file for name's next contents, with a random name
// that nothing had (O_EXCL: a link of that name is not followed).
func createTemp(dir *os.Root, name string) (*os.File, string, error) {
	for range 10 {
		tmpName := tempPrefix(name) + rand.Text()[:10]
		f, err := dir.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, tmpName, err
		}
	}
	return nil, "", fmt.Errorf("no free temporary name for %s", name)
}

func syncDir(dir *os.Root) error {
	d, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// setAside moves a file that cannot be read as it should be out of the way,
// next to where it was, so that nothing the user owns is overwritten. It
// moves the entry itself (a rename follows no link) and returns the new
// name.
func setAside(dir *os.Root, name string, now time.Time) (string, error) {
	aside := fmt.Sprintf("%s.corrupt-%s", name, now.UTC().Format("20060102T150405.000Z"))
	if err := dir.Rename(name, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// staleTempAge is how old a temporary file of writeFileAtomic must be to
// count as left behind by a process killed mid-write: a write takes
// milliseconds.
const staleTempAge = time.Minute

// removeStaleTemps deletes temporary files of name's atomic writes that a
// killed process left behind.
func removeStaleTemps(dir *os.Root, name string, now time.Time) {
	d, err := dir.Open(".")
	if err != nil {
		return
	}
	entries, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix(name)) {
			continue
		}
		if info, err := dir.Lstat(e.Name()); err == nil && info.Mode().IsRegular() && now.Sub(info.ModTime()) > staleTempAge {
			dir.Remove(e.Name())
		}
	}
}

// openStateDir opens dir, the user's own state directory, making it if
// needed.
func openStateDir(dir string) (*os.Root, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return os.OpenRoot(filepath.Clean(dir))
}
