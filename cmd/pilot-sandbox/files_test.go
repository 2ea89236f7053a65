package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestBadProjectFilesAreKeptAndReported spoils the .pilot files of a
// project whose sandbox runs, as a crash, a full disk or a person might: a
// truncated sandbox.json in one project, a directory in its place in
// another (unreadable), and a truncated settings.json. A sidecar started
// afterwards keeps serving: it reports each file (sandbox/warning), moves
// the bad state files aside byte for byte before writing true ones, reads
// the bad settings as tools off without touching them, and moves them aside
// only when it must write them.
func TestBadProjectFilesAreKeptAndReported(t *testing.T) {
	docker := dockertest.Engine(t)
	truncated, unreadable := dockertest.Project(t, docker), dockertest.Project(t, docker)
	stateHome := "XDG_STATE_HOME=" + t.TempDir()
	first := startSidecar(t, "ndjson", stateHome, ownScope(t))
	states := map[string]map[string]any{}
	for _, p := range []string{truncated, unreadable} {
		states[p] = result(t, first.call("sandbox/start", map[string]any{"projectPath": p}, 5*time.Minute))
	}
	result(t, first.call("shutdown", nil, 10*time.Second))
	first.write(map[string]any{"method": "exit"})
	first.wait()

	pilot := func(p, name string) string { return filepath.Join(p, ".pilot", name) }
	record, _ := os.ReadFile(pilot(truncated, "sandbox.json"))
	badRecord := record[:len(record)/2]
	os.WriteFile(pilot(truncated, "sandbox.json"), badRecord, 0o644)
	os.Remove(pilot(unreadable, "sandbox.json"))
	os.MkdirAll(filepath.Join(pilot(unreadable, "sandbox.json"), "inside"), 0o755)
	badSettings := []byte(`{"theme": "dark", "dockerToolsEn`)
	os.WriteFile(pilot(truncated, "settings.json"), badSettings, 0o644)

	s := startSidecar(t, "ndjson", stateHome, ownScope(t))
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	for _, c := range []struct{ project, problem string }{{truncated, "corrupt"}, {unreadable, "unreadable"}} {
		w := s.waitNotification("sandbox/warning", func(w map[string]any) bool {
			return w["projectPath"] == c.project && strings.HasSuffix(w["file"].(string), "sandbox.json")
		}, time.Minute)
		kept, _ := w["keptAs"].(string)
		if w["problem"] != c.problem || kept == "" || !strings.Contains(w["message"].(string), "kept it as") {
			t.Errorf("warning for %s's sandbox.json: %v", filepath.Base(c.project), w)
		}
		info, err := os.Stat(kept)
		switch {
		case err != nil:
			t.Errorf("%s was not kept: %v", kept, err)
		case c.problem == "corrupt":
			if data, _ := os.ReadFile(kept); string(data) != string(badRecord) {
				t.Errorf("kept %q, want %q", data, badRecord)
			}
		case !info.IsDir():
			t.Errorf("%s is not the directory that was in the way", kept)
		}
		st := result(t, s.call("sandbox/status", map[string]any{"projectPath": c.project}, time.Minute))
		if st["status"] != "running" || st["containerId"] != states[c.project]["containerId"] {
			t.Errorf("status: %v", st)
		}
		assertStateFile(t, c.project, st)
	}

	on := result(t, s.call("sandbox/getToolsEnabled", map[string]any{"projectPath": truncated}, 10*time.Second))
	w := s.waitNotification("sandbox/warning", func(w map[string]any) bool {
		return w["projectPath"] == truncated && strings.HasSuffix(w["file"].(string), "settings.json")
	}, time.Minute)
	if on["enabled"] != false || w["problem"] != "corrupt" || w["keptAs"] != nil || !strings.Contains(w["message"].(string), "agent tools count as off") {
		t.Errorf("reading bad settings: %v, warning %v", on, w)
	}
	if data, _ := os.ReadFile(pilot(truncated, "settings.json")); string(data) != string(badSettings) {
		t.Errorf("reading changed the bad settings: %q", data)
	}
	result(t, s.call("sandbox/setToolsEnabled", map[string]any{"projectPath": truncated, "enabled": true}, 10*time.Second))
	w = s.waitNotification("sandbox/warning", func(w map[string]any) bool {
		return w["projectPath"] == truncated && w["keptAs"] != nil
	}, time.Minute)
	if data, _ := os.ReadFile(w["keptAs"].(string)); string(data) != string(badSettings) {
		t.Errorf("the bad settings were not kept as they were: %q", data)
	}
	if on := result(t, s.call("sandbox/getToolsEnabled", map[string]any{"projectPath": truncated}, 10*time.Second)); on["enabled"] != true {
		t.Errorf("tools after the write: %v", on)
	}
}
