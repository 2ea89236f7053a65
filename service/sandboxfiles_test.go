package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// TestFilesOfStoppedSandbox writes and reads a file of a stopped sandbox
// through the manager, and hears an upload's progress.
func TestFilesOfStoppedSandbox(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := h.m.Files(ctx, dir); !errors.Is(err, ErrNoSandbox) {
		t.Fatalf("files of a project without a sandbox: %v", err)
	}
	if _, err := h.m.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	st, err := h.m.Stop(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	h.docker.mu.Lock()
	h.docker.files[st.ContainerID]["/home/sandbox/.bashrc"] = "" // the image's home
	h.docker.mu.Unlock()
	files, err := h.m.Files(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := files.Write(ctx, sandboxfs.WriteRequest{Path: "notes.txt", Data: []byte("hello")})
	if err != nil || w.Path != "/home/sandbox/notes.txt" || w.Size != 5 {
		t.Fatalf("write: %+v %v", w, err)
	}
	if got := h.docker.uploaded(st.ContainerID, "/home/sandbox/notes.txt"); got != "hello" {
		t.Fatalf("the container has %q", got)
	}
	r, err := files.Read(ctx, "/home/sandbox/notes.txt", 1, 3)
	if err != nil || string(r.Data) != "ell" || r.Size != 5 || r.EOF {
		t.Fatalf("read: %+v %v", r, err)
	}
	host := filepath.Join(t.TempDir(), "up.txt")
	os.WriteFile(host, []byte("up"), 0o644)
	if _, err := files.Upload(ctx, host, "up.txt"); err != nil {
		t.Fatal(err)
	}
	var copied []Progress
	for _, ev := range h.drain() {
		if ev.Kind == EventProgress && ev.Progress.Stage == StageCopy {
			copied = append(copied, ev.Progress)
		}
	}
	if len(copied) == 0 || copied[len(copied)-1].Current != 2 || copied[len(copied)-1].Total != 2 || copied[0].ProjectPath != st.ProjectPath {
		t.Fatalf("copy progress %+v", copied)
	}
}
