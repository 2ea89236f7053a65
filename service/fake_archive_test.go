package service

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// The fake's archive API keeps what CopyTo and UploadArchive extract in
// f.files, as full paths: a path is a directory when files lie under it.

func (f *fakeDocker) StatPath(ctx context.Context, id, p string) (sandboxfs.PathStat, error) {
	defer f.mu.Unlock()
	if err := f.enter("StatPath"); err != nil {
		return sandboxfs.PathStat{}, err
	}
	if f.lookup(id) == nil {
		return sandboxfs.PathStat{}, ErrContainerNotFound
	}
	for name, data := range f.files[id] {
		name = strings.TrimSuffix(name, "/")
		switch {
		case name == p:
			return sandboxfs.PathStat{Name: path.Base(p), Size: int64(len(data)), Mode: 0o644, Mtime: f.now}, nil
		case p == "/" || strings.HasPrefix(name, p+"/"):
			return sandboxfs.PathStat{Name: path.Base(p), Mode: fs.ModeDir | 0o755, Mtime: f.now}, nil
		}
	}
	return sandboxfs.PathStat{}, &sandboxfs.NotFoundError{Path: p}
}

// DownloadArchive sends a file's archive (not a directory's).
func (f *fakeDocker) DownloadArchive(ctx context.Context, id, p string) (io.ReadCloser, error) {
	defer f.mu.Unlock()
	if err := f.enter("DownloadArchive"); err != nil {
		return nil, err
	}
	data, ok := f.files[id][p]
	if !ok {
		return nil, &sandboxfs.NotFoundError{Path: p}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: path.Base(p), Typeflag: tar.TypeReg, Size: int64(len(data)), Mode: 0o644})
	io.WriteString(tw, data)
	tw.Close()
	return io.NopCloser(&buf), nil
}

func (f *fakeDocker) UploadArchive(ctx context.Context, id, dir string, archive io.Reader) error {
	err := f.CopyTo(ctx, id, strings.TrimSuffix(dir, "/"), archive)
	f.mu.Lock()
	f.calls["UploadArchive"]++
	f.mu.Unlock()
	return err
}
