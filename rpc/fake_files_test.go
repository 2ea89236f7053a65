package rpc

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Files gives a project with a sandbox, running or stopped, the files of
// one in-memory container shared by every project (a conversation sees
// what it wrote).
func (f *fakeService) Files(ctx context.Context, path string) (*sandboxfs.FS, error) {
	project, err := f.enter(ctx, path)
	if err != nil {
		return nil, err
	}
	if _, ok := f.state(project); !ok {
		return nil, service.ErrNoSandbox
	}
	return sandboxfs.New(fakeContainerFiles, "c0ffee", sandboxfs.Options{}), nil
}

var fakeContainerFiles = &memArchive{files: map[string]string{}}

// memArchive is a container's files in memory: /home/sandbox, and the
// files written into it (no directories of their own).
type memArchive struct {
	mu    sync.Mutex // guards files
	files map[string]string
}

var fakeTime = time.UnixMilli(1_700_000_000_000).UTC()

func (m *memArchive) StatPath(_ context.Context, _, p string) (sandboxfs.PathStat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if data, ok := m.files[p]; ok {
		return sandboxfs.PathStat{Name: path.Base(p), Size: int64(len(data)), Mode: 0o644, Mtime: fakeTime}, nil
	}
	if p == "/" || p == "/home" || p == sandboxfs.Home {
		return sandboxfs.PathStat{Name: path.Base(p), Mode: fs.ModeDir | 0o755, Mtime: fakeTime}, nil
	}
	return sandboxfs.PathStat{}, &sandboxfs.NotFoundError{Path: p}
}

func (m *memArchive) DownloadArchive(_ context.Context, _, p string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: path.Base(p), Typeflag: tar.TypeReg, Size: int64(len(m.files[p])), Mode: 0o644, ModTime: fakeTime})
	io.WriteString(tw, m.files[p])
	tw.Close()
	return io.NopCloser(&buf), nil
}

func (m *memArchive) UploadArchive(_ context.Context, _, dir string, archive io.Reader) error {
	tr := tar.NewReader(archive)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(tr)
		if !strings.HasSuffix(h.Name, "/") {
			m.mu.Lock()
			m.files[path.Join(dir, h.Name)] = string(data)
			m.mu.Unlock()
		}
	}
}
