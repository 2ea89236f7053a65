package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandsRefuseArgumentsTheyDoNotTake: a project directory given
// without -project was ignored, and `pilot-sandbox start ~/other` started
// the sandbox of the current directory. Every command that takes no
// arguments now refuses one, before it touches Docker or any file; the
// commands that take arguments (exec, cp, tool) are tested with theirs.
func TestCommandsRefuseArgumentsTheyDoNotTake(t *testing.T) {
	other := t.TempDir()
	for _, args := range [][]string{
		{"start", other},
		{"stop", other, "-json"},
		{"status", other},
		{"remove", other},
		{"approve", other},
		{"list", "extra"},
		{"prune", "extra"},
		{"screenshot", other},
		{"build", "extra"},
		{"doctor", "extra"},
		{"serve", "extra"},
		{"mcp", other},
	} {
		cwd := t.TempDir()
		cmd := exec.Command(binary, args...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "DOCKER_HOST=unix:///nonexistent.sock")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		want := `unexpected argument "` + args[1] + `"`
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, stdout.String(), stderr.String(), want)
		}
		for _, dir := range []string{cwd, other} {
			if _, err := os.Stat(filepath.Join(dir, ".pilot")); err == nil {
				t.Errorf("%v: wrote %s/.pilot", args, dir)
			}
		}
	}
}
