//go:build unix

package sandboxfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// TestASparseFileStaysSparse: a 1 GiB sparse file in the sandbox (4 bytes
// of data at 512 MiB, the rest holes) took 1 GiB of the host's disk once
// downloaded (the audit of issue 28). It arrives whole, as holes. And a
// download of more data than the destination's file system has room for
// (a 64 MiB tmpfs, run as root) is refused before it fills it (it wrote
// until the disk was full), leaving nothing there, while the sparse
// gigabyte fits in it.
func TestASparseFileStaysSparse(t *testing.T) {
	s := newSandbox(t)
	ctx := context.Background()
	s.sh("truncate -s 1G sparse && printf data | dd of=sparse bs=1 seek=536870912 conv=notrunc status=none && head -c 100m /dev/urandom > dense")
	files := s.files()
	host := filepath.Join(t.TempDir(), "sparse")
	if _, err := files.Download(ctx, "sparse", host, false); err != nil {
		t.Fatal(err)
	}
	assertSparse(t, host)

	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs takes root")
	}
	small := t.TempDir()
	if err := syscall.Mount("tmpfs", small, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(small, syscall.MNT_DETACH) })
	_, err := files.Download(ctx, "dense", filepath.Join(small, "dense"), false)
	var fe *sandboxfs.FieldError
	if !errors.As(err, &fe) || fe.Field != "hostPath" || !strings.Contains(fe.Reason, "free on the destination") {
		t.Errorf("100 MiB into a 64 MiB file system: %v, want it refused before the file system is full", err)
	}
	if left, _ := os.ReadDir(small); len(left) != 0 {
		t.Errorf("a refused download left %d entries", len(left))
	}
	if _, err := files.Download(ctx, "sparse", filepath.Join(small, "sparse"), false); err != nil {
		t.Fatalf("the sparse gigabyte into 64 MiB: %v", err)
	}
	assertSparse(t, filepath.Join(small, "sparse"))
}

// assertSparse checks the downloaded file: 1 GiB long, "data" at 512 MiB,
// and next to nothing on the disk.
func assertSparse(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, 4)
	if _, err := f.ReadAt(got, 512<<20); err != nil || string(got) != "data" {
		t.Errorf("at 512 MiB: %q %v", got, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 1<<30 || st.Blocks*512 > 1<<20 {
		t.Errorf("%s is %d bytes long and takes %d bytes of disk; want 1 GiB taking almost none", path, st.Size, st.Blocks*512)
	}
}
