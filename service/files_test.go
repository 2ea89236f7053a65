package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSetToolsEnabledPreservesEveryOtherByte(t *testing.T) {
	for _, tc := range []struct {
		name, before, after string
	}{
		{"no file", "", "{\n  \"dockerToolsEnabled\": true\n}\n"},
		{"empty object", "{}", "{\n  \"dockerToolsEnabled\": true\n}"},
		{"empty object with space", "{ \n }\n", "{\n  \"dockerToolsEnabled\": true\n}\n"},
		{
			"other keys, their formatting and order kept",
			"{\n    \"yoloMode\": false,\n    \"jail\": {\"enabled\": true,  \"allowedPaths\": [\"/a\", \"/b\"]},\n    \"z\": 1.50\n}\n",
			"{\n    \"yoloMode\": false,\n    \"jail\": {\"enabled\": true,  \"allowedPaths\": [\"/a\", \"/b\"]},\n    \"z\": 1.50,\n  \"dockerToolsEnabled\": true\n}\n",
		},
		{
			"existing key replaced in place",
			"{\"a\": [1,2], \"dockerToolsEnabled\": false, \"b\": \"ü\"}",
			"{\"a\": [1,2], \"dockerToolsEnabled\": true, \"b\": \"ü\"}",
		},
		{
			"a non-boolean value is replaced",
			"{\"dockerToolsEnabled\": \"yes\"}",
			"{\"dockerToolsEnabled\": true}",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.before != "" {
				os.MkdirAll(filepath.Join(dir, pilotDir), 0o755)
				os.WriteFile(settingsFile(dir), []byte(tc.before), 0o640)
			}
			aside, err := writeSettingsBool(dir, toolsKey, true, failSetAside(t))
			if err != nil || aside != "" {
				t.Fatalf("write: %q, %v", aside, err)
			}
			got, _ := os.ReadFile(settingsFile(dir))
			if string(got) != tc.after {
				t.Errorf("file =\n%s\nwant\n%s", got, tc.after)
			}
			doc, err := readSettings(dir)
			if err != nil || !doc.bool(toolsKey) {
				t.Errorf("read back: %v, %v", doc, err)
			}
			if tc.before != "" {
				if info, _ := os.Stat(settingsFile(dir)); info.Mode().Perm() != 0o640 {
					t.Errorf("mode = %v, want the file's own 0640", info.Mode().Perm())
				}
			}
		})
	}
}

func failSetAside(t *testing.T) func(string) (string, error) {
	return func(p string) (string, error) {
		t.Errorf("set aside %s, which is not corrupt", p)
		return "", errors.New("unexpected")
	}
}

func TestCorruptSettingsAreSetAsideNotOverwritten(t *testing.T) {
	for _, bad := range []string{"{\"a\": ", "[1,2]", "null", "{\"a\":1} trailing", "\x00\xff"} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, pilotDir), 0o755)
		os.WriteFile(settingsFile(dir), []byte(bad), 0o644)
		if _, err := readSettings(dir); !errors.Is(err, errCorrupt) {
			t.Errorf("%q: read err = %v, want errCorrupt", bad, err)
		}
		now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		aside, err := writeSettingsBool(dir, toolsKey, true, func(p string) (string, error) { return setAside(p, now) })
		if err != nil {
			t.Fatalf("%q: %v", bad, err)
		}
		kept, err := os.ReadFile(aside)
		if err != nil || string(kept) != bad {
			t.Errorf("%q: the corrupt file was not kept as it was: %q, %v", bad, kept, err)
		}
		if !strings.HasPrefix(filepath.Base(aside), "settings.json.corrupt-20261121T100000") {
			t.Errorf("aside name = %s", aside)
		}
		if doc, err := readSettings(dir); err != nil || !doc.bool(toolsKey) {
			t.Errorf("%q: new file: %v", bad, err)
		}
	}
}

func TestToolsEnabledDefaultsOff(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	if on, err := h.m.ToolsEnabled(dir); on || err != nil {
		t.Errorf("no settings file: %v, %v", on, err)
	}
	os.MkdirAll(filepath.Join(dir, pilotDir), 0o755)
	os.WriteFile(settingsFile(dir), []byte("{broken"), 0o644)
	if on, err := h.m.ToolsEnabled(dir); on || err != nil {
		t.Errorf("corrupt settings file: %v, %v", on, err)
	}
	if data, _ := os.ReadFile(settingsFile(dir)); string(data) != "{broken" {
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
		t.Skip("root writes through directory permissions")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	_, err := writeSettingsBool(dir, toolsKey, true, failSetAside(t))
	if err == nil || !strings.Contains(err.Error(), "settings.json") {
		t.Errorf("err = %v", err)
	}
}

func TestSandboxRecordIsAtomicAndCorruptOnesAreKept(t *testing.T) {
	dir := t.TempDir()
	rec := sandboxRecord{ContainerID: "abc", WSPort: 1, VNCPort: 2, Status: StatusRunning, CreatedAt: 5}
	if _, err := writeRecord(dir, rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := readRecord(dir)
	if err != nil || *got != rec {
		t.Fatalf("read back %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, pilotDir))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	os.WriteFile(sandboxFile(dir), []byte("{\"containerId\": 12"), 0o644)
	if _, err := readRecord(dir); !errors.Is(err, errCorrupt) {
		t.Errorf("corrupt record read as %v", err)
	}
	aside, err := writeRecord(dir, rec, time.Now())
	if err != nil || aside == "" {
		t.Fatalf("write over corrupt: %q, %v", aside, err)
	}
	if kept, _ := os.ReadFile(aside); string(kept) != "{\"containerId\": 12" {
		t.Errorf("corrupt record not kept: %q", kept)
	}
}

func TestRegistrySurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	r, err := openRegistry(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.add("/b")
	r.add("/a")
	r.add("/b")
	r.remove("/c")
	again, err := openRegistry(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(again.list(), ","); got != "/a,/b" {
		t.Errorf("registry = %s", got)
	}
	if info, _ := os.Stat(filepath.Join(dir, "projects.json")); info.Mode().Perm() != 0o600 {
		t.Errorf("registry mode %v", info.Mode().Perm())
	}
	os.WriteFile(filepath.Join(dir, "projects.json"), []byte("nope"), 0o600)
	if r, err := openRegistry(dir); !errors.Is(err, errCorrupt) || len(r.list()) != 0 {
		t.Errorf("corrupt registry: %v", err)
	}
}

func TestProjectConfig(t *testing.T) {
	for _, tc := range []struct {
		settings string
		want     *Display
		errField string
	}{
		{``, nil, ""},
		{`{"yoloMode": true}`, nil, ""},
		{`{"sandbox": {}}`, nil, ""},
		{`{"sandbox": {"display": {"width": 2560, "height": 1600}}}`, &Display{2560, 1600}, ""},
		{`{"sandbox": {"display": {"width": 100, "height": 1600}}}`, nil, "sandbox.display.width"},
		{`{"sandbox": {"display": {"width": 1920, "height": 99999}}}`, nil, "sandbox.display.height"},
		{`{"sandbox": {"display": {"width": "wide", "height": 1}}}`, nil, "sandbox"},
		{`{"sandbox": {"colour": "blue"}}`, nil, "sandbox"},
		{`{"sandbox": [1]}`, nil, "sandbox"},
		{`not json`, nil, ""}, // a corrupt file gives the defaults
	} {
		dir := t.TempDir()
		if tc.settings != "" {
			os.MkdirAll(filepath.Join(dir, pilotDir), 0o755)
			os.WriteFile(settingsFile(dir), []byte(tc.settings), 0o644)
		}
		cfg, err := readProjectConfig(dir)
		var ce *ConfigError
		switch {
		case tc.errField != "":
			if !errors.As(err, &ce) || ce.Field != tc.errField {
				t.Errorf("%s: err = %v, want one for %s", tc.settings, err, tc.errField)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.settings, err)
		case (cfg.Display == nil) != (tc.want == nil) || (tc.want != nil && *cfg.Display != *tc.want):
			t.Errorf("%s: display %v, want %v", tc.settings, cfg.Display, tc.want)
		}
	}
}

func TestProjectDisplayAppliesAtCreation(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	os.MkdirAll(filepath.Join(dir, pilotDir), 0o755)
	os.WriteFile(settingsFile(dir), []byte(`{"sandbox": {"display": {"width": 1920, "height": 1080}}}`), 0o644)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Display != (Display{1920, 1080}) {
		t.Errorf("display = %+v", st.Display)
	}
	c, _ := h.docker.InspectContainer(context.Background(), st.ContainerID)
	if !strings.Contains(strings.Join(c.Env, " "), "RESOLUTION=1920x1080x24") {
		t.Errorf("env = %v", c.Env)
	}
	os.WriteFile(settingsFile(dir), []byte(`{"sandbox": {"display": {"width": 1, "height": 1}}}`), 0o644)
	other := project(t)
	os.MkdirAll(filepath.Join(other, pilotDir), 0o755)
	os.WriteFile(settingsFile(other), []byte(`{"sandbox": {"display": {"width": 1, "height": 1}}}`), 0o644)
	var ce *ConfigError
	if _, err := h.m.Start(context.Background(), other); !errors.As(err, &ce) {
		t.Errorf("start with a bad display: %v", err)
	}
	if n := h.docker.count("CreateContainer"); n != 1 {
		t.Errorf("%d containers created", n)
	}
}
