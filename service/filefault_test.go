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

// A repository's settings.json that is a link (here to a file outside the
// project asking for the machine) is neither obeyed nor written through: a
// start makes the sandbox with the default settings and says why, the
// tools switch reads as off, and setting it is refused naming the file,
// with the file linked to unchanged (issue 16).
func TestALinkedSettingsFileCountsAsAbsent(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	outside := filepath.Join(t.TempDir(), "elsewhere.json")
	wanted := `{"dockerToolsEnabled": true, "sandbox": {"memory": "4g", "processes": 300, "display": {"width": 1024, "height": 768}}}`
	os.WriteFile(outside, []byte(wanted), 0o600)
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	os.Symlink(outside, projectfs.SettingsFile(dir))

	st, err := h.m.Start(ctx, dir)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	c, _ := h.docker.InspectContainer(ctx, st.ContainerID)
	if c.Limits != DefaultLimits || st.Display != desktop.DefaultDisplay {
		t.Errorf("made with %+v and %+v, want the defaults", c.Limits, st.Display)
	}
	w := h.warnings()
	if len(w) != 1 || w[0].Problem != projectfs.FileRefused || w[0].File != projectfs.SettingsFile(dir) ||
		!strings.Contains(w[0].Message, "symbolic link") || !strings.Contains(w[0].Message, "default settings") {
		t.Errorf("warnings = %+v", w)
	}
	if on, err := h.m.ToolsEnabled(dir); on || err != nil {
		t.Errorf("tools enabled through a link: %v, %v", on, err)
	}
	_, err = h.m.SetToolsEnabled(dir, false)
	var fe *projectfs.FileError
	if !errors.As(err, &fe) || fe.Problem != projectfs.FileRefused || !errors.Is(err, ErrProjectFile) || fe.Path != projectfs.SettingsFile(dir) {
		t.Errorf("set through a link: %v", err)
	}
	if data, _ := os.ReadFile(outside); string(data) != wanted {
		t.Errorf("the file linked to changed: %q", data)
	}
	if info, err := os.Lstat(projectfs.SettingsFile(dir)); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", info, err)
	}
}
