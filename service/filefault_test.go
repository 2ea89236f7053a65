package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// warnings returns the warning events published so far.
func (h *harness) warnings() []Warning {
	var out []Warning
	for _, ev := range h.drain() {
		if ev.Kind == EventWarning {
			out = append(out, ev.Warning)
		}
	}
	return out
}

// A sandbox.json found corrupt when the sidecar starts is set aside (kept,
// byte for byte), written anew, and reported once; so is one that goes
// bad, or missing, while the sidecar runs.
func TestCorruptStateFileFoundAtStartupIsKeptAndReported(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	h.docker.addContainer(dir, true, 0, desktop.Secret{Control: "ctrl1234", View: "view1234"})
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	os.WriteFile(projectfs.SandboxFile(dir), []byte(`{"containerId": "ab`), 0o644)

	if _, err := h.m.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := h.warnings()
	if len(w) != 1 || w[0].Problem != projectfs.FileCorrupt || w[0].File != projectfs.SandboxFile(dir) || w[0].KeptAs == "" || !strings.Contains(w[0].Message, "kept it as") {
		t.Fatalf("warnings = %+v", w)
	}
	if kept, _ := os.ReadFile(w[0].KeptAs); string(kept) != `{"containerId": "ab` {
		t.Errorf("kept %q", kept)
	}
	if rec, err := projectfs.ReadRecord(dir); err != nil || rec.Status != string(StatusRunning) {
		t.Errorf("new state file: %+v, %v", rec, err)
	}
	h.m.List(context.Background())
	if w := h.warnings(); len(w) != 0 {
		t.Errorf("warned again with nothing new: %+v", w)
	}
	os.WriteFile(projectfs.SandboxFile(dir), []byte("{}"), 0o644) // edited by hand
	h.m.List(context.Background())
	if w := h.warnings(); len(w) != 1 || w[0].KeptAs == "" {
		t.Errorf("a bad file appearing while running: %+v", w)
	}
	os.Remove(projectfs.SandboxFile(dir))
	h.m.List(context.Background())
	if rec, err := projectfs.ReadRecord(dir); err != nil || rec == nil {
		t.Errorf("a lost state file is not written again: %v", err)
	}
}

// A .pilot directory that cannot be written does not stop the sandbox:
// the operation succeeds, and the problem is reported once, with the file.
func TestUnwritableStateFileLeavesTheSandboxAlone(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	// A file where .pilot should be: no one, not even root, can write in it.
	os.WriteFile(filepath.Join(dir, projectfs.Dir), []byte("in the way"), 0o644)
	st, err := h.m.Start(ctx, dir)
	if err != nil || st.Status != StatusRunning {
		t.Fatalf("start: %+v, %v", st, err)
	}
	w := h.warnings()
	if len(w) != 1 || w[0].Problem != projectfs.FileUnwritable || w[0].File != projectfs.SandboxFile(dir) {
		t.Fatalf("warnings = %+v", w)
	}
	if st, err := h.m.Stop(ctx, dir); err != nil || st.Status != StatusStopped {
		t.Errorf("stop: %+v, %v", st, err)
	}
	if w := h.warnings(); len(w) != 0 {
		t.Errorf("the same problem reported again: %+v", w)
	}
	_, err = h.m.SetToolsEnabled(dir, true)
	var fe *projectfs.FileError
	if !errors.As(err, &fe) || fe.Problem != projectfs.FileUnwritable || fe.Path != projectfs.SettingsFile(dir) {
		t.Errorf("setToolsEnabled: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, projectfs.Dir)); string(data) != "in the way" {
		t.Errorf("the file in the way changed: %q", data)
	}
}

// A settings file that cannot be read turns the agent tools off, is
// reported once, and is left alone until the sidecar must write it.
func TestUnreadableSettingsTurnToolsOffAndAreReported(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	os.MkdirAll(projectfs.SettingsFile(dir), 0o755) // a directory in its place
	for range 2 {
		if on, err := h.m.ToolsEnabled(dir); on || err != nil {
			t.Errorf("tools: %v, %v", on, err)
		}
	}
	w := h.warnings()
	if len(w) != 1 || w[0].Problem != projectfs.FileUnreadable || !strings.Contains(w[0].Message, "agent tools count as off") {
		t.Fatalf("warnings = %+v", w)
	}
	if on, err := h.m.SetToolsEnabled(dir, true); !on || err != nil {
		t.Fatalf("set: %v, %v", on, err)
	}
	w = h.warnings()
	if len(w) != 1 || w[0].KeptAs == "" {
		t.Fatalf("warnings after the write = %+v", w)
	}
	if info, err := os.Stat(w[0].KeptAs); err != nil || !info.IsDir() {
		t.Errorf("the directory was not kept: %v", err)
	}
	if on, _ := h.m.ToolsEnabled(dir); !on {
		t.Error("tools not on after the write")
	}
}
