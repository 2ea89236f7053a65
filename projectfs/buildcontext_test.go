package projectfs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func contextProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, Dir, "files"), 0o755)
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, Dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Dockerfile", "ARG PILOT_BASE\nFROM ${PILOT_BASE}\n")
	write("files/a.txt", "a")
	write("settings.json", `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`)
	write("sandbox.json", `{"containerId": "x"}`)
	return dir
}

func TestBuildContextDigest(t *testing.T) {
	dir := contextProject(t)
	first, err := ReadBuildContext(dir, ".pilot/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if first.Files != 2 || first.Dir != ".pilot" || first.Name != "Dockerfile" || !strings.HasPrefix(first.Digest, "sha256:") {
		t.Errorf("files %d, dir %s, name %s, digest %s", first.Files, first.Dir, first.Name, first.Digest)
	}
	again, _ := ReadBuildContext(dir, ".pilot/Dockerfile")
	if again.Digest != first.Digest {
		t.Errorf("two reads of the same files differ")
	}
	// The sidecar's and the app's own files change without asking again.
	os.WriteFile(SettingsFile(dir), []byte(`{"dockerToolsEnabled": true, "sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`), 0o644)
	os.WriteFile(SandboxFile(dir), []byte(`{"containerId": "y"}`), 0o644)
	os.WriteFile(filepath.Join(dir, Dir, "sandbox.json.corrupt-20260101T000000.000Z"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, Dir, gitignoreName), []byte(gitignore), 0o644)
	if c, _ := ReadBuildContext(dir, ".pilot/Dockerfile"); c.Digest != first.Digest {
		t.Errorf("settings.json, sandbox.json or .gitignore changed the digest")
	}
	for _, change := range []func(){
		func() { os.WriteFile(filepath.Join(dir, Dir, "files/a.txt"), []byte("b"), 0o644) },
		func() { os.Chmod(filepath.Join(dir, Dir, "files/a.txt"), 0o755) },
		func() { os.WriteFile(filepath.Join(dir, Dir, "files/new.txt"), nil, 0o644) },
		func() { os.WriteFile(filepath.Join(dir, Dir, "Dockerfile"), []byte("FROM x\n"), 0o644) },
	} {
		before, _ := ReadBuildContext(dir, ".pilot/Dockerfile")
		change()
		if after, _ := ReadBuildContext(dir, ".pilot/Dockerfile"); after.Digest == before.Digest {
			t.Errorf("a change of the context kept the digest")
		}
	}
}

func TestBuildContextRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		words string
	}{
		{"link in context", func(dir string) { os.Symlink("/etc/passwd", filepath.Join(dir, Dir, "files/passwd")) }, "symbolic link (to /etc/passwd)"},
		{"Dockerfile is a link", func(dir string) {
			os.Remove(filepath.Join(dir, Dir, "Dockerfile"))
			os.Symlink("/etc/hostname", filepath.Join(dir, Dir, "Dockerfile"))
		}, "symbolic link"},
		{".pilot is a link", func(dir string) {
			other := t.TempDir()
			os.Rename(filepath.Join(dir, Dir), filepath.Join(other, "p"))
			os.Symlink(filepath.Join(other, "p"), filepath.Join(dir, Dir))
		}, ".pilot is a symbolic link"},
		{"pipe", func(dir string) { syscall.Mkfifo(filepath.Join(dir, Dir, "files/fifo"), 0o644) }, "a named pipe"},
		{"missing", func(dir string) { os.Remove(filepath.Join(dir, Dir, "Dockerfile")) }, "does not exist"},
		{"too large", func(dir string) {
			f, _ := os.Create(filepath.Join(dir, Dir, "files/big"))
			f.Truncate(MaxContextBytes + 1)
			f.Close()
		}, "more than 64.0 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := contextProject(t)
			tc.setup(dir)
			_, err := ReadBuildContext(dir, ".pilot/Dockerfile")
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "sandbox.image" || !strings.Contains(ce.Reason, tc.words) {
				t.Errorf("err = %v, want sandbox.image ... %q", err, tc.words)
			}
		})
	}
}

// BenchmarkReadBuildContext reads and digests a context of 200 files of
// 50 KiB (10 MiB), as every creation of a sandbox from a project
// Dockerfile does, and a restart of one (to say whether it changed).
func BenchmarkReadBuildContext(b *testing.B) {
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, Dir, "files"), 0o755)
	os.WriteFile(filepath.Join(dir, Dir, "Dockerfile"), []byte("ARG PILOT_BASE\nFROM ${PILOT_BASE}\nCOPY files /files\n"), 0o644)
	data := make([]byte, 50<<10)
	for i := range 200 {
		os.WriteFile(filepath.Join(dir, Dir, "files", strconv.Itoa(i)), data, 0o644)
	}
	b.SetBytes(200 * 50 << 10)
	for b.Loop() {
		if _, err := ReadBuildContext(dir, ".pilot/Dockerfile"); err != nil {
			b.Fatal(err)
		}
	}
}
