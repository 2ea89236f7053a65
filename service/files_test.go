package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
			aside, err := writeSettingsBool(dir, toolsKey, true, time.Now())
			if err != nil || aside != nil {
				t.Fatalf("write: %v, %v", aside, err)
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

func TestCorruptSettingsAreSetAsideNotOverwritten(t *testing.T) {
	for _, bad := range []string{"{\"a\": ", "[1,2]", "null", "{\"a\":1} trailing", "\x00\xff", ""} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, pilotDir), 0o755)
		os.WriteFile(settingsFile(dir), []byte(bad), 0o644)
		var fe *FileError
		if _, err := readSettings(dir); !errors.As(err, &fe) || fe.Problem != FileCorrupt || !errors.Is(err, ErrProjectFile) {
			t.Errorf("%q: read err = %v, want a corrupt FileError", bad, err)
		}
		now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		aside, err := writeSettingsBool(dir, toolsKey, true, now)
		if err != nil || aside == nil {
			t.Fatalf("%q: %v, %v", bad, aside, err)
		}
		kept, err := os.ReadFile(aside.KeptAs)
		if err != nil || string(kept) != bad {
			t.Errorf("%q: the corrupt file was not kept as it was: %q, %v", bad, kept, err)
		}
		if !strings.HasPrefix(filepath.Base(aside.KeptAs), "settings.json.corrupt-20261121T100000") ||
			!strings.Contains(aside.Error(), "kept it as "+aside.KeptAs) {
			t.Errorf("aside %s: %v", aside.KeptAs, aside)
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
		t.Skip("root writes through directory permissions (TestFullOrReadOnlyProjectFileSystem covers root)")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	_, err := writeSettingsBool(dir, toolsKey, true, time.Now())
	var fe *FileError
	if !errors.As(err, &fe) || fe.Problem != FileUnwritable || !strings.Contains(err.Error(), "settings.json: permission denied") {
		t.Errorf("err = %v", err)
	}
}

// A sandbox.json that is corrupt, truncated, not a record, or cannot be
// read is moved aside, byte for byte, before a new one is written.
func TestSandboxRecordIsAtomicAndBadOnesAreKept(t *testing.T) {
	rec := sandboxRecord{ContainerID: "abc", WSPort: 1, VNCPort: 2, Status: StatusRunning, CreatedAt: 5}
	for _, tc := range []struct {
		name    string
		plant   func(path string)
		problem FileProblem
	}{
		{"truncated", func(p string) { os.WriteFile(p, []byte("{\"containerId\": \"ab"), 0o644) }, FileCorrupt},
		{"wrong type", func(p string) { os.WriteFile(p, []byte("{\"containerId\": 12}"), 0o644) }, FileCorrupt},
		{"null", func(p string) { os.WriteFile(p, []byte("null"), 0o644) }, FileCorrupt},
		{"empty", func(p string) { os.WriteFile(p, nil, 0o644) }, FileCorrupt},
		{"a directory in its place", func(p string) { os.MkdirAll(filepath.Join(p, "inside"), 0o755) }, FileUnreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, pilotDir), 0o755)
			tc.plant(sandboxFile(dir))
			before := filesUnder(t, sandboxFile(dir))
			var fe *FileError
			if _, err := readRecord(dir); !errors.As(err, &fe) || fe.Problem != tc.problem {
				t.Fatalf("read: %v, want a %s FileError", err, tc.problem)
			}
			aside, err := writeRecord(dir, rec, time.Now())
			if err != nil || aside == nil || aside.Problem != tc.problem {
				t.Fatalf("write over it: %v, %v", aside, err)
			}
			got, err := readRecord(dir)
			if err != nil || *got != rec {
				t.Errorf("read back %+v, %v", got, err)
			}
			if kept := filesUnder(t, aside.KeptAs); kept != before {
				t.Errorf("the bad file was not kept as it was:\n%s\nwant\n%s", kept, before)
			}
		})
	}
	dir := t.TempDir()
	if _, err := writeRecord(dir, rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, pilotDir)); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// A temporary file of an atomic write left by a process killed mid-write
// goes at the next write; one being written now stays.
func TestStaleTemporaryFilesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, pilotDir), 0o755)
	old := filepath.Join(dir, pilotDir, ".sandbox.json.tmp-123")
	fresh := filepath.Join(dir, pilotDir, ".sandbox.json.tmp-456")
	other := filepath.Join(dir, pilotDir, ".settings.json.tmp-789")
	for _, p := range []string{old, fresh, other} {
		os.WriteFile(p, []byte("{"), 0o644)
	}
	now := time.Now()
	os.Chtimes(old, now.Add(-time.Hour), now.Add(-time.Hour))
	os.Chtimes(other, now.Add(-time.Hour), now.Add(-time.Hour))
	if _, err := writeRecord(dir, sandboxRecord{ContainerID: "abc"}, now); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{old: false, fresh: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// The state file goes into the project's .pilot directory, which may be
// made; the project directory itself never is, so a project deleted while
// its sandbox ran stays deleted.
func TestARemovedProjectIsNotMadeAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	if _, err := writeRecord(dir, sandboxRecord{ContainerID: "abc"}, time.Now()); err == nil {
		t.Error("wrote a state file into a project that does not exist")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the project directory was made: %v", err)
	}
}

// filesUnder lists the names and contents of the files under dir.
func filesUnder(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, path)
			data, _ := os.ReadFile(path)
			fmt.Fprintf(&b, "%s %v %q\n", rel, d.IsDir(), data)
		}
		return nil
	})
	return b.String()
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
		{`{"sandbox": {"display": {"width": "wide", "height": 1}}}`, nil, "sandbox.display.width"},
		{`{"sandbox": {"colour": "blue"}}`, nil, "sandbox"},
		{`{"sandbox": [1]}`, nil, "sandbox"},
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
