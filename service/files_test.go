package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

func TestToolsEnabledDefaultsOff(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	if on, err := h.m.ToolsEnabled(dir); on || err != nil {
		t.Errorf("no settings file: %v, %v", on, err)
	}
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	os.WriteFile(projectfs.SettingsFile(dir), []byte("{broken"), 0o644)
	if on, err := h.m.ToolsEnabled(dir); on || err != nil {
		t.Errorf("corrupt settings file: %v, %v", on, err)
	}
	if data, _ := os.ReadFile(projectfs.SettingsFile(dir)); string(data) != "{broken" {
		t.Error("reading changed the corrupt file")
	}
	if on, err := h.m.SetToolsEnabled(dir, true); !on || err != nil {
		t.Fatalf("set: %v, %v", on, err)
	}
	if on, err := h.m.ToolsEnabled(dir); !on || err != nil {
		t.Errorf("after set: %v, %v", on, err)
	}
}

func TestUnwritableProjectDirectoryIsAClearError(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes through directory permissions (TestFullOrReadOnlyProjectFileSystem covers root)")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	_, err := projectfs.WriteSettingsBool(dir, projectfs.ToolsKey, true, time.Now())
	var fe *projectfs.FileError
	if !errors.As(err, &fe) || fe.Problem != projectfs.FileUnwritable || !strings.Contains(err.Error(), "settings.json: permission denied") {
		t.Errorf("err = %v", err)
	}
}

// A sandbox.json that is corrupt, truncated, not a record, or cannot be
// read is moved aside, byte for byte, before a new one is written.
func TestProjectDisplayAppliesAtCreation(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	os.WriteFile(projectfs.SettingsFile(dir), []byte(`{"sandbox": {"display": {"width": 1920, "height": 1080}}}`), 0o644)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Display != (desktop.Display{Width: 1920, Height: 1080}) {
		t.Errorf("display = %+v", st.Display)
	}
	c, _ := h.docker.InspectContainer(context.Background(), st.ContainerID)
	if !strings.Contains(strings.Join(c.Env, " "), "RESOLUTION=1920x1080x24") {
		t.Errorf("env = %v", c.Env)
	}
	os.WriteFile(projectfs.SettingsFile(dir), []byte(`{"sandbox": {"display": {"width": 1, "height": 1}}}`), 0o644)
	other := project(t)
	os.MkdirAll(filepath.Join(other, projectfs.Dir), 0o755)
	os.WriteFile(projectfs.SettingsFile(other), []byte(`{"sandbox": {"display": {"width": 1, "height": 1}}}`), 0o644)
	var ce *projectfs.ConfigError
	if _, err := h.m.Start(context.Background(), other); !errors.As(err, &ce) {
		t.Errorf("start with a bad display: %v", err)
	}
	if n := h.docker.count("CreateContainer"); n != 1 {
		t.Errorf("%d containers created", n)
	}
}
