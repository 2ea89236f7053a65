package projectfs

import (
	"bufio"
	"io"
	"os"
	"time"
)

// WriteStateFile replaces name in dir, a directory of the user's state
// (made if missing, mode 0700), with what write writes, atomically (a
// reader or a crash sees the old file or the new one) and buffered, so a
// large file (a workspace's manifest) streams to disk instead of being
// held whole. A failed write leaves the old file.
func WriteStateFile(dir, name string, write func(w io.Writer) error) error {
	root, err := openStateDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	removeStaleTemps(root, name, time.Now())
	tmp, tmpName, err := createTemp(root, name)
	if err != nil {
		return err
	}
	defer root.Remove(tmpName) // fails once renamed
	bw := bufio.NewWriterSize(tmp, 256<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := root.Rename(tmpName, name); err != nil {
		return err
	}
	return syncDir(root)
}

// OpenStateFile opens name in dir for reading; a missing file is an
// fs.ErrNotExist error.
func OpenStateFile(dir, name string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Open(name)
}
