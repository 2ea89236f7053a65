package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// smallFileSystem mounts a tmpfs of 1 MiB as a project directory and
// unmounts it when the test ends. Mounting takes root (CAP_SYS_ADMIN), as
// CI has; elsewhere the test is skipped and says so.
func smallFileSystem(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small file system to fill (%v): run as root to test a full or read-only project directory", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes a file until the file system is full and returns its removal.
func fill(t *testing.T, dir string) func() {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return func() { os.Remove(path) }
		}
	}
}

// TestFullOrReadOnlyProjectFileSystem runs a sandbox for a project whose
// directory fills up, then turns read-only. Writes of .pilot/ fail with a
// clear error (-32007, naming the file and the cause) or, where no request
// is waiting for them, a sandbox/warning; the files stay as they were and
// the sandbox runs on. Once there is room again, the state file is true.
func TestFullOrReadOnlyProjectFileSystem(t *testing.T) {
	docker := dockertest.Engine(t)
	project := smallFileSystem(t)
	t.Cleanup(func() { dockertest.RemoveSandbox(t, docker, project) })
	settings := filepath.Join(project, ".pilot", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	original := []byte("{\n  \"theme\": \"dark\",\n  \"dockerToolsEnabled\": false\n}\n")
	os.WriteFile(settings, original, 0o644)

	s := startSidecar(t, "ndjson")
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	p := map[string]any{"projectPath": project}
	st := result(t, s.call("sandbox/start", p, 5*time.Minute))

	for _, c := range []struct {
		name  string
		cause string
		spoil func() func()
	}{
		{"disk full", "the disk is full", func() func() { return fill(t, project) }},
		{"read-only", "read-only", func() func() {
			if err := syscall.Mount("", project, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
				t.Fatal(err)
			}
			return func() { syscall.Mount("", project, "", syscall.MS_REMOUNT, "size=1m") }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			recordBefore, _ := os.ReadFile(filepath.Join(project, ".pilot", "sandbox.json"))
			undo := c.spoil()
			msg := s.call("sandbox/setToolsEnabled", map[string]any{"projectPath": project, "enabled": true}, time.Minute)
			e, _ := msg["error"].(map[string]any)
			data, _ := e["data"].(map[string]any)
			if e == nil || e["code"] != -32007.0 || data["kind"] != "file_error" || data["file"] != settings || !strings.Contains(e["message"].(string), c.cause) {
				t.Errorf("setToolsEnabled: %v", msg)
			}
			if got, _ := os.ReadFile(settings); !bytes.Equal(got, original) {
				t.Errorf("settings.json changed: %q", got)
			}
			if out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "echo unaffected"}, time.Minute)); out["stdout"] != "unaffected\n" {
				t.Errorf("the sandbox with its project directory %s: %v", c.name, out)
			}
			stopped := result(t, s.call("sandbox/stop", p, time.Minute))
			if stopped["status"] != "stopped" {
				t.Errorf("stop: %v", stopped)
			}
			w := s.waitNotification("sandbox/warning", func(w map[string]any) bool { return w["projectPath"] == project }, time.Minute)
			if w["problem"] != "unwritable" || !strings.HasSuffix(w["file"].(string), "sandbox.json") || !strings.Contains(w["message"].(string), c.cause) {
				t.Errorf("warning: %v", w)
			}
			if got, _ := os.ReadFile(filepath.Join(project, ".pilot", "sandbox.json")); !bytes.Equal(got, recordBefore) {
				t.Errorf("sandbox.json changed though it could not be written: %q", got)
			}
			if entries := settledEntries(filepath.Join(project, ".pilot"), 3); len(entries) != 3 {
				t.Errorf(".pilot holds %v, want settings.json, sandbox.json and .gitignore alone", entries)
			}

			undo()
			st = result(t, s.call("sandbox/start", p, 5*time.Minute))
			assertStateFile(t, project, st)
		})
	}
}

// settledEntries lists dir until it holds want entries, for up to ten
// seconds: a later write of the record (after the one the warning told of)
// may still be failing, its temporary file not yet removed.
func settledEntries(dir string, want int) []os.DirEntry {
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, _ := os.ReadDir(dir)
		if len(entries) == want || time.Now().After(deadline) {
			return entries
		}
		time.Sleep(50 * time.Millisecond)
	}
}
