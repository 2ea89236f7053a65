package projectfs

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// tempPattern is the name writeFileAtomic gives its temporary files.
func tempPattern(path string) string { return "." + filepath.Base(path) + ".tmp-*" }

// writeFileAtomic replaces path with data so that a reader (or a crash) sees
// the old file or the new one, never a part: a temporary file in the same
// directory, fsync, rename, fsync of the directory.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, tempPattern(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
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
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// setAside moves a file that cannot be read as it should be out of the way,
// next to where it was, so that nothing the user owns is overwritten. It
// returns the new name.
func setAside(path string, now time.Time) (string, error) {
	aside := fmt.Sprintf("%s.corrupt-%s", path, now.UTC().Format("20060102T150405.000Z"))
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// staleTempAge is how old a temporary file of writeFileAtomic must be to
// count as left behind by a process killed mid-write: a write takes
// milliseconds.
const staleTempAge = time.Minute

// removeStaleTemps deletes temporary files of path's atomic writes that a
// killed process left behind.
func removeStaleTemps(path string, now time.Time) {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), tempPattern(path)))
	for _, m := range matches {
		if info, err := os.Lstat(m); err == nil && info.Mode().IsRegular() && now.Sub(info.ModTime()) > staleTempAge {
			os.Remove(m)
		}
	}
}
