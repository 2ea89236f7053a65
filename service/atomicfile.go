package service

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// writeFileAtomic replaces path with data so that a reader (or a crash) sees
// the old file or the new one, never a part: a temporary file in the same
// directory, fsync, rename, fsync of the directory.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
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
