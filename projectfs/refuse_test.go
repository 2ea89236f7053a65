package projectfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A cloned repository's .pilot is a stranger's: its files are used only as
// regular files inside the project (issue 16). hostile is one way a
// repository can plant a file, and what of the user's it points at.
type hostile struct {
	name string
	// plant makes project's .pilot/<file> (or .pilot itself) hostile; home
	// is a directory outside the project standing for the user's own.
	plant func(t *testing.T, project, file, home string)
}

// credential stands for ~/.docker/config.json: valid JSON the user would
// not want copied anywhere.
const credential = `{"auths": {"registry.example": {"auth": "c2VjcmV0OnRva2Vu"}}}`

// vscodeSettings stands for ~/.config/Code/User/settings.json: JSON with
// comments, so not valid JSON to the sidecar.
const vscodeSettings = "{\n  // mine\n  \"editor.fontSize\": 14,\n}\n"

func symlinkTo(target func(home string) string) func(t *testing.T, project, file, home string) {
	return func(t *testing.T, project, file, home string) {
		os.MkdirAll(filepath.Join(project, Dir), 0o755)
		if err := os.Symlink(target(home), filepath.Join(project, Dir, file)); err != nil {
			t.Fatal(err)
		}
	}
}

func hostiles() []hostile {
	return []hostile{
		{"a link to /dev/zero", symlinkTo(func(string) string { return "/dev/zero" })},
		{"a link to /proc/self/fd/0", symlinkTo(func(string) string { return "/proc/self/fd/0" })},
		{"a link to the user's credentials", symlinkTo(func(home string) string { return filepath.Join(home, ".docker", "config.json") })},
		{"a relative link inside the project", symlinkTo(func(string) string { return "../README" })},
		{"a named pipe", func(t *testing.T, project, file, _ string) {
			os.MkdirAll(filepath.Join(project, Dir), 0o755)
			if err := syscall.Mkfifo(filepath.Join(project, Dir, file), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}},
		{"a file over 1 MiB", func(t *testing.T, project, file, _ string) {
			os.MkdirAll(filepath.Join(project, Dir), 0o755)
			big := `{"containerId": "abc", "padding": "` + strings.Repeat("x", 1<<20) + `"}`
			os.WriteFile(filepath.Join(project, Dir, file), []byte(big), 0o644)
		}},
		{".pilot a link to the user's VS Code settings", func(t *testing.T, project, _, home string) {
			linkPilot(t, project, filepath.Join(home, ".config", "Code", "User"))
		}},
		{".pilot a link to a directory inside the project", func(t *testing.T, project, file, _ string) {
			os.MkdirAll(filepath.Join(project, "elsewhere"), 0o755)
			os.WriteFile(filepath.Join(project, "elsewhere", file), []byte(`{"containerId": "abc"}`), 0o644)
			linkPilot(t, project, "elsewhere")
		}},
	}
}

// linkPilot makes the project's .pilot a link to target, once.
func linkPilot(t *testing.T, project, target string) {
	err := os.Symlink(target, filepath.Join(project, Dir))
	if err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
}

// userHome makes a stand-in for the user's home, outside the project: a
// Docker credential, VS Code settings, and a sandbox.json and settings.json
// in VS Code's directory for a .pilot link to find.
func userHome(t *testing.T) string {
	home := t.TempDir()
	files := map[string]string{
		".docker/config.json":                 credential,
		".config/Code/User/settings.json":     vscodeSettings,
		".config/Code/User/sandbox.json":      `{"containerId": "the user's"}`,
		".config/Code/User/keybindings.json":  "[]",
		".config/Code/User/snippets/go.json":  "{}",
		".config/Code/User/.settings.json.tm": "left alone",
	}
	for name, data := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(home, name)), 0o755)
		os.WriteFile(filepath.Join(home, name), []byte(data), 0o600)
	}
	return home
}

// boundedMemory fails the test binary at once, rather than let it take the
// machine, if a read of an endless file grows the heap past limit.
func boundedMemory(t *testing.T, limit uint64) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > limit {
				panic(fmt.Sprintf("%s: the heap grew to %d MiB reading a hostile file", t.Name(), ms.HeapAlloc>>20))
			}
		}
	}()
}

// within fails the test if read does not return in time: a named pipe or
// the process's own stdin would block it for ever.
func within(t *testing.T, read func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); read() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the read blocks (a named pipe or stdin was opened and read)")
	}
}

func wantRefused(t *testing.T, what string, err error, path string) {
	t.Helper()
	var fe *FileError
	if !errors.As(err, &fe) || fe.Problem != FileRefused || !errors.Is(err, ErrRefused) || fe.Path != path {
		t.Errorf("%s: %v, want a refused FileError for %s", what, err, path)
	}
}

func TestHostilePilotFilesAreNotRead(t *testing.T) {
	boundedMemory(t, 256<<20)
	for _, h := range hostiles() {
		t.Run(h.name, func(t *testing.T) {
			home := userHome(t)
			settings, record := t.TempDir(), t.TempDir()
			h.plant(t, settings, "settings.json", home)
			h.plant(t, record, "sandbox.json", home)
			within(t, func() {
				doc, err := ReadSettings(settings)
				wantRefused(t, "ReadSettings", err, SettingsFile(settings))
				if doc == nil || len(doc.spans) != 0 {
					t.Errorf("ReadSettings: %v, want an empty document (the file counts as absent)", doc)
				}
				cfg, err := ReadConfig(settings)
				wantRefused(t, "ReadConfig", err, SettingsFile(settings))
				if cfg != (Config{}) {
					t.Errorf("ReadConfig: %+v, want no settings", cfg)
				}
				rec, err := ReadRecord(record)
				wantRefused(t, "ReadRecord", err, SandboxFile(record))
				if rec != nil {
					t.Errorf("ReadRecord: %+v", rec)
				}
			})
		})
	}
}

// Writing refuses too, naming the file, and changes nothing: not the file
// pointed at, not the link, not the user's directory; nothing is set aside
// and nothing is copied into the project.
func TestHostilePilotFilesAreNotWritten(t *testing.T) {
	boundedMemory(t, 256<<20)
	for _, h := range hostiles() {
		t.Run(h.name, func(t *testing.T) {
			home := userHome(t)
			project := t.TempDir()
			h.plant(t, project, "settings.json", home)
			h.plant(t, project, "sandbox.json", home)
			os.WriteFile(filepath.Join(project, "README"), []byte("readme"), 0o644)
			homeBefore, projectBefore := filesUnder(t, home), listing(t, project)
			within(t, func() {
				aside, err := WriteSettingsBool(project, ToolsKey, true, time.Now())
				wantRefused(t, "WriteSettingsBool", err, SettingsFile(project))
				if aside != nil {
					t.Errorf("set aside: %v", aside)
				}
				aside, err = WriteRecord(project, Record{ContainerID: "new"}, time.Now())
				wantRefused(t, "WriteRecord", err, SandboxFile(project))
				if aside != nil {
					t.Errorf("set aside: %v", aside)
				}
				wantRefused(t, "RemoveRecord", RemoveRecord(project), SandboxFile(project))
			})
			if after := filesUnder(t, home); after != homeBefore {
				t.Errorf("the user's files changed:\n%s\nwere\n%s", after, homeBefore)
			}
			if after := listing(t, project); after != projectBefore {
				t.Errorf("the project changed:\n%s\nwas\n%s", after, projectBefore)
			}
		})
	}
}

// listing is the project's entries, their types, and the contents of its
// regular files (links and pipes are not followed).
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s %v", rel, info.Mode())
		if info.Mode().IsRegular() && info.Size() < 4096 {
			data, _ := os.ReadFile(path)
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteByte('\n')
		return nil
	})
	return b.String()
}

func TestRefusalSaysWhy(t *testing.T) {
	boundedMemory(t, 256<<20)
	home := userHome(t)
	project := t.TempDir()
	symlinkTo(func(string) string { return "/dev/zero" })(t, project, "settings.json", home)
	_, err := ReadSettings(project)
	if msg := err.Error(); !strings.Contains(msg, "symbolic link") || !strings.Contains(msg, "/dev/zero") || !strings.Contains(msg, "regular file") {
		t.Errorf("message: %s", msg)
	}
	other := t.TempDir()
	os.Symlink(filepath.Join(home, ".config", "Code", "User"), filepath.Join(other, Dir))
	_, err = WriteSettingsBool(other, ToolsKey, true, time.Now())
	if msg := err.Error(); !strings.Contains(msg, filepath.Join(other, Dir)+" is a symbolic link") {
		t.Errorf("message: %s", msg)
	}
	if RecordExists(other) {
		t.Error("a record found through a .pilot link")
	}
}

// The registry is the user's own, but its read is bounded all the same.
func TestRegistryReadIsBounded(t *testing.T) {
	dir := t.TempDir()
	var projects []string
	for i := range 40000 {
		projects = append(projects, fmt.Sprintf("%q", fmt.Sprintf("/home/me/project-with-a-long-name-%06d", i)))
	}
	os.WriteFile(filepath.Join(dir, "projects.json"), []byte(`{"projects": [`+strings.Join(projects, ",")+`]}`), 0o600)
	r, err := OpenRegistry(dir)
	if err == nil || !strings.Contains(err.Error(), "larger than 1.0 MiB") || len(r.List()) != 0 {
		t.Errorf("a 2 MiB registry: %d projects, %v", len(r.List()), err)
	}
}
