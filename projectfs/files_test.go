package projectfs

import (
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
				os.MkdirAll(filepath.Join(dir, Dir), 0o755)
				os.WriteFile(SettingsFile(dir), []byte(tc.before), 0o640)
			}
			aside, err := WriteSettingsBool(dir, ToolsKey, true, time.Now())
			if err != nil || aside != nil {
				t.Fatalf("write: %v, %v", aside, err)
			}
			got, _ := os.ReadFile(SettingsFile(dir))
			if string(got) != tc.after {
				t.Errorf("file =\n%s\nwant\n%s", got, tc.after)
			}
			doc, err := ReadSettings(dir)
			if err != nil || !doc.Bool(ToolsKey) {
				t.Errorf("read back: %v, %v", doc, err)
			}
			if tc.before != "" {
				if info, _ := os.Stat(SettingsFile(dir)); info.Mode().Perm() != 0o640 {
					t.Errorf("mode = %v, want the file's own 0640", info.Mode().Perm())
				}
			}
		})
	}
}

func TestCorruptSettingsAreSetAsideNotOverwritten(t *testing.T) {
	for _, bad := range []string{"{\"a\": ", "[1,2]", "null", "{\"a\":1} trailing", "\x00\xff", ""} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, Dir), 0o755)
		os.WriteFile(SettingsFile(dir), []byte(bad), 0o644)
		var fe *FileError
		if _, err := ReadSettings(dir); !errors.As(err, &fe) || fe.Problem != FileCorrupt || !errors.Is(err, ErrFile) {
			t.Errorf("%q: read err = %v, want a corrupt FileError", bad, err)
		}
		now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		aside, err := WriteSettingsBool(dir, ToolsKey, true, now)
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
		if doc, err := ReadSettings(dir); err != nil || !doc.Bool(ToolsKey) {
			t.Errorf("%q: new file: %v", bad, err)
		}
	}
}

func TestSandboxRecordIsAtomicAndBadOnesAreKept(t *testing.T) {
	rec := Record{ContainerID: "abc", WSPort: 1, VNCPort: 2, Status: "running", CreatedAt: 5}
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
			os.MkdirAll(filepath.Join(dir, Dir), 0o755)
			tc.plant(SandboxFile(dir))
			before := filesUnder(t, SandboxFile(dir))
			var fe *FileError
			if _, err := ReadRecord(dir); !errors.As(err, &fe) || fe.Problem != tc.problem {
				t.Fatalf("read: %v, want a %s FileError", err, tc.problem)
			}
			aside, err := WriteRecord(dir, rec, time.Now())
			if err != nil || aside == nil || aside.Problem != tc.problem {
				t.Fatalf("write over it: %v, %v", aside, err)
			}
			got, err := ReadRecord(dir)
			if err != nil || *got != rec {
				t.Errorf("read back %+v, %v", got, err)
			}
			if kept := filesUnder(t, aside.KeptAs); kept != before {
				t.Errorf("the bad file was not kept as it was:\n%s\nwant\n%s", kept, before)
			}
		})
	}
	dir := t.TempDir()
	if _, err := WriteRecord(dir, rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, Dir)); len(entries) != 2 { // the record and .gitignore
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// A temporary file of an atomic write left by a process killed mid-write
// goes at the next write; one being written now stays.
func TestStaleTemporaryFilesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, Dir), 0o755)
	old := filepath.Join(dir, Dir, ".sandbox.json.tmp-123")
	fresh := filepath.Join(dir, Dir, ".sandbox.json.tmp-456")
	other := filepath.Join(dir, Dir, ".settings.json.tmp-789")
	for _, p := range []string{old, fresh, other} {
		os.WriteFile(p, []byte("{"), 0o644)
	}
	now := time.Now()
	os.Chtimes(old, now.Add(-time.Hour), now.Add(-time.Hour))
	os.Chtimes(other, now.Add(-time.Hour), now.Add(-time.Hour))
	if _, err := WriteRecord(dir, Record{ContainerID: "abc"}, now); err != nil {
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
	if _, err := WriteRecord(dir, Record{ContainerID: "abc"}, time.Now()); err == nil {
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
	r, err := OpenRegistry(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Add("/b")
	r.Add("/a")
	r.Add("/b")
	r.Remove("/c")
	again, err := OpenRegistry(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(again.List(), ","); got != "/a,/b" {
		t.Errorf("registry = %s", got)
	}
	if info, _ := os.Stat(filepath.Join(dir, "projects.json")); info.Mode().Perm() != 0o600 {
		t.Errorf("registry mode %v", info.Mode().Perm())
	}
	os.WriteFile(filepath.Join(dir, "projects.json"), []byte("nope"), 0o600)
	if r, err := OpenRegistry(dir); !errors.Is(err, errCorrupt) || len(r.List()) != 0 {
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
			os.MkdirAll(filepath.Join(dir, Dir), 0o755)
			os.WriteFile(SettingsFile(dir), []byte(tc.settings), 0o644)
		}
		cfg, err := ReadConfig(dir)
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

func TestProjectConfigImage(t *testing.T) {
	for _, tc := range []struct {
		settings, want, errWords string
	}{
		{`{"sandbox": {}}`, "", ""},
		{`{"sandbox": {"image": "browser"}}`, "browser", ""},
		{`{"sandbox": {"image": "desktop"}}`, "desktop", ""},
		{`{"sandbox": {"image": "dev"}}`, "dev", ""},
		{`{"sandbox": {"image": "firefox"}}`, "", `must be "browser", "desktop", "dev" or {"dockerfile": "PATH"}; it is "firefox"`},
		{`{"sandbox": {"image": 3}}`, "", `must be "browser", "desktop", "dev" or {"dockerfile": "PATH"}; it is 3`},
		{`{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`, "", ""},
		{`{"sandbox": {"image": {"dockerfile": "docker/dev.Dockerfile"}}}`, "", ""},
		{`{"sandbox": {"image": {"dockerfile": "../Dockerfile"}}}`, "", "inside it"},
		{`{"sandbox": {"image": {"dockerfile": "/etc/Dockerfile"}}}`, "", "inside it"},
		{`{"sandbox": {"image": {"dockerfile": ".pilot/../../x"}}}`, "", "inside it"},
		{`{"sandbox": {"image": {"dockerfile": "./.pilot/Dockerfile"}}}`, "", "clean path"},
		{`{"sandbox": {"image": {"dockerfile": ".pilot\\Dockerfile"}}}`, "", "backslash"},
		{`{"sandbox": {"image": {"dockerfile": ""}}}`, "", "is empty"},
		{`{"sandbox": {"image": {"dockerfile": 7}}}`, "", "PATH must be a string"},
		{`{"sandbox": {"image": {"dockerfile": "Dockerfile", "context": "."}}}`, "", `{"dockerfile": "PATH"}`},
		{`{"sandbox": {"image": {"other": 1}}}`, "", `must be "browser", "desktop", "dev" or {"dockerfile": "PATH"}`},
	} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, Dir), 0o755)
		os.WriteFile(SettingsFile(dir), []byte(tc.settings), 0o644)
		cfg, err := ReadConfig(dir)
		var ce *ConfigError
		switch {
		case tc.errWords != "":
			if !errors.As(err, &ce) || ce.Field != "sandbox.image" || !strings.Contains(ce.Reason, tc.errWords) {
				t.Errorf("%s: err = %v, want sandbox.image: ...%s", tc.settings, err, tc.errWords)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.settings, err)
		case cfg.ImageVariant() != tc.want:
			t.Errorf("%s: variant %q, want %q", tc.settings, cfg.ImageVariant(), tc.want)
		}
	}
}

func TestProjectConfigNetwork(t *testing.T) {
	for _, tc := range []struct {
		settings        string
		none            bool
		preset          string
		deny            int
		errField, words string
	}{
		{settings: `{"sandbox": {}}`},
		{settings: `{"sandbox": {"network": "none"}}`, none: true},
		{settings: `{"sandbox": {"network": {"preset": "locked", "deny": ["tracker.example", "10.0.0.0/8"]}}}`, preset: "locked", deny: 2},
		{settings: `{"sandbox": {"network": {"allow": ["api.example.com:443"]}}}`},
		{settings: `{"sandbox": {"network": "open"}}`, errField: "sandbox.network", words: `must be "none"`},
		{settings: `{"sandbox": {"network": {"deny": ["a..b"]}}}`, errField: "sandbox.network.deny", words: "empty label"},
		{settings: `{"sandbox": {"network": {"askTimeout": "1s"}}}`, errField: "sandbox.network.askTimeout", words: "not a known key"},
		{settings: `{"sandbox": {"network": {"preset": "wide"}}}`, errField: "sandbox.network.preset"},
	} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, Dir), 0o755)
		os.WriteFile(SettingsFile(dir), []byte(tc.settings), 0o644)
		cfg, err := ReadConfig(dir)
		var ce *ConfigError
		switch {
		case tc.errField != "":
			if !errors.As(err, &ce) || ce.Field != tc.errField || !strings.Contains(ce.Reason, tc.words) {
				t.Errorf("%s: err = %v, want %s: ...%s", tc.settings, err, tc.errField, tc.words)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.settings, err)
		default:
			np := cfg.NetworkPolicy()
			if cfg.NetworkNone() != tc.none || np.Preset != tc.preset || len(np.Deny) != tc.deny {
				t.Errorf("%s: %+v", tc.settings, np)
			}
		}
	}
}
