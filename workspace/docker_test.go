package workspace_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// sandbox is a real sandbox, as a workspace.Sandbox.
type sandbox struct {
	dockertest.Sandbox
	t        testing.TB
	stateDir string
}

func newSandbox(t testing.TB) *sandbox {
	t.Helper()
	m, docker := dockertest.Manager(t, nil)
	project := dockertest.Project(t, docker)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := m.Start(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	return &sandbox{Sandbox: dockertest.Sandbox{M: m, Project: project, Container: st.ContainerID}, t: t, stateDir: t.TempDir()}
}

func (s *sandbox) workspace() *workspace.Workspace {
	return workspace.New(s, s.Project, workspace.Options{Program: resources.WorkspaceProgram(), StateDir: s.stateDir})
}

// sh runs a shell command in the sandbox and returns its stdout, failing
// the test unless it exits 0.
func (s *sandbox) sh(command string) string {
	s.t.Helper()
	out, err := s.M.Exec(context.Background(), s.Project, service.ExecRequest{Command: command, Timeout: 2 * time.Minute})
	if err != nil || out.ExitCode != 0 {
		s.t.Fatalf("%s: %v %+v", command, err, out)
	}
	return out.Stdout
}

// write makes a file in the host project.
func write(t testing.TB, dir, rel, content string) {
	t.Helper()
	file := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

// gitProject makes the project a git repository with tracked, untracked,
// ignored, .pilot and linked files.
func gitProject(t testing.TB, dir string) {
	t.Helper()
	git(t, dir, "init", "-q")
	write(t, dir, ".gitignore", "build/\n*.log\n")
	write(t, dir, "src/main.go", "package main\n")
	write(t, dir, "README.md", "# demo\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "first")
	write(t, dir, "notes.txt", "untracked, not ignored\n")
	write(t, dir, "build/out.bin", "ignored\n")
	write(t, dir, "debug.log", "ignored\n")
	write(t, dir, ".pilot/sandbox.json", "{}\n")
	if err := os.Symlink("../../etc/passwd", filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
}

func TestSyncAGitProject(t *testing.T) {
	s := newSandbox(t)
	gitProject(t, s.Project)
	ctx := context.Background()
	ws := s.workspace()

	first, err := ws.Sync(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Changed || first.Files != 5 || first.Sent != 5 {
		t.Errorf("first sync: %+v; want 5 files sent (.gitignore, src/main.go, README.md, notes.txt, escape)", first)
	}
	got := s.sh("cd /workspace && git ls-files | sort && git rev-parse refs/pilot/base && readlink escape && stat -c %U src/main.go && git status --porcelain")
	want := ".gitignore\nREADME.md\nescape\nnotes.txt\nsrc/main.go\n" + first.Base + "\n../../etc/passwd\nsandbox\n"
	if got != want {
		t.Errorf("the workspace holds\n%s\nwant\n%s", got, want)
	}

	again, err := ws.Sync(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed || again.Sent != 0 || again.Base != first.Base {
		t.Errorf("a sync with nothing changed: %+v", again)
	}

	write(t, s.Project, "src/main.go", "package main\n\nfunc main() {}\n")
	write(t, s.Project, "src/new.go", "package main\n")
	os.Remove(filepath.Join(s.Project, "notes.txt"))
	third, err := ws.Sync(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !third.Changed || third.Sent != 2 || third.Removed != 1 {
		t.Errorf("an incremental sync: %+v; want 2 sent, 1 removed", third)
	}
	got = s.sh("cd /workspace && git ls-files | sort && cat src/main.go && git rev-parse refs/pilot/base^")
	want = ".gitignore\nREADME.md\nescape\nsrc/main.go\nsrc/new.go\npackage main\n\nfunc main() {}\n" + first.Base + "\n"
	if got != want {
		t.Errorf("after an incremental sync the workspace holds\n%s\nwant\n%s", got, want)
	}
}

// TestSyncSavesWhatNoTaskSaved: a sync finds changes in the working tree,
// keeps them on a ref and puts the base back; the manifest then still
// says what the sandbox holds.
func TestSyncSavesWhatNoTaskSaved(t *testing.T) {
	s := newSandbox(t)
	write(t, s.Project, "a.txt", "host\n")
	ctx := context.Background()
	ws := s.workspace()
	first, err := ws.Sync(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.sh("echo edited > /workspace/a.txt && echo new > /workspace/b.txt")
	res, err := ws.Sync(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Saved, "refs/pilot/saved/") || res.Base != first.Base {
		t.Fatalf("sync over unsaved changes: %+v", res)
	}
	if got := s.sh("cd /workspace && cat a.txt && ls && git show " + res.Saved + ":a.txt"); got != "host\na.txt\nedited\n" {
		t.Errorf("after the sync: %q", got)
	}
}

// TestSyncAfterTheManifestIsLost sends everything again and mends the
// workspace.
func TestSyncAfterTheManifestIsLost(t *testing.T) {
	s := newSandbox(t)
	write(t, s.Project, "a", "1")
	write(t, s.Project, "b", "2")
	ctx := context.Background()
	if _, err := s.workspace().Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(s.Project, "b"))
	s.stateDir = t.TempDir()
	res, err := s.workspace().Sync(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 1 || !res.Changed {
		t.Errorf("a sync without a manifest: %+v", res)
	}
	if got := s.sh("cd /workspace && git ls-files && ls"); got != "a\na\n" {
		t.Errorf("the workspace holds %q; want only a", got)
	}
}
