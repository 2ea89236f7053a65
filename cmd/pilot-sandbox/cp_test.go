package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCp copies a tree into a sandbox and back with pilot-sandbox cp, as
// docker cp would: into an existing directory under the source's name,
// out refusing to replace a file unless --overwrite, and out of a stopped
// sandbox.
func TestCp(t *testing.T) {
	cli := newProjectCLI(t)
	project := cli.project
	run := func(args ...string) (string, string, int) { return cli.run(nil, args...) }
	// The desktop image: files are the same in every image, and it is the
	// quickest to build.
	os.MkdirAll(filepath.Join(project, ".pilot"), 0o755)
	os.WriteFile(filepath.Join(project, ".pilot", "settings.json"), []byte(`{"sandbox": {"image": "desktop"}}`), 0o644)
	if _, errOut, code := run("start"); code != 0 {
		t.Fatalf("start: %s", errOut)
	}
	os.MkdirAll(filepath.Join(project, "dist", "assets"), 0o755)
	os.WriteFile(filepath.Join(project, "dist", "index.html"), []byte("<h1>site</h1>"), 0o644)
	os.WriteFile(filepath.Join(project, "dist", "assets", "app.js"), []byte("run()"), 0o600)
	os.Symlink("assets/app.js", filepath.Join(project, "dist", "app.js"))

	steps := []struct {
		args []string
		code int
		out  string // in stdout (code 0) or stderr
	}{
		{[]string{"cp", "./dist", "sandbox:/home/sandbox/site"}, 0, "3 files"},
		{[]string{"exec", "--", "sh", "-c", "cat site/index.html site/app.js; stat -c '%U %a' site/assets/app.js"}, 0, "<h1>site</h1>run()sandbox 600\n"},
		// An existing directory receives the copy under its own name.
		{[]string{"cp", "dist", "sandbox:site"}, 0, "sandbox:/home/sandbox/site/dist"},
		{[]string{"exec", "--", "cat", "site/dist/index.html"}, 0, "<h1>site</h1>"},
		{[]string{"cp", "sandbox:site/index.html", "back.html"}, 0, "1 files"},
		{[]string{"cp", "sandbox:site/index.html", "back.html"}, 1, "set overwrite"},
		{[]string{"cp", "--overwrite", "sandbox:site/index.html", "back.html"}, 0, "1 files"},
		{[]string{"cp", "sandbox:no/such/file", "x"}, 1, "no such file or directory in the sandbox"},
		{[]string{"cp", "dist", "site"}, 2, ""},
		{[]string{"stop"}, 0, "stopped"},
		// A stopped sandbox's files are there too.
		{[]string{"cp", "sandbox:/home/sandbox/site", "back"}, 0, "6 files"},
	}
	for _, s := range steps {
		out, errOut, code := run(s.args...)
		text := out
		if code != 0 {
			text = errOut
		}
		if code != s.code || !strings.Contains(text, s.out) {
			t.Fatalf("%v: code %d, want %d with %q\nstdout: %s\nstderr: %s", s.args, code, s.code, s.out, out, errOut)
		}
	}
	for file, want := range map[string]string{"back.html": "<h1>site</h1>", "back/app.js": "run()", "back/dist/assets/app.js": "run()"} {
		if b, err := os.ReadFile(filepath.Join(project, file)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", file, b, err)
		}
	}
	if target, err := os.Readlink(filepath.Join(project, "back", "app.js")); err != nil || target != "assets/app.js" {
		t.Errorf("the link came back as %q %v", target, err)
	}
}
