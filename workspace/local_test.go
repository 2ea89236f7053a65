package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// localSandbox runs the workspace program on this machine, its /workspace
// a temporary directory: the fast loop's stand-in for a sandbox (the same
// program, the same git; docker_test.go runs them in a real one).
type localSandbox struct {
	dir string // stands for /workspace
	// rewrite, when set, changes a command's output: a hostile sandbox.
	rewrite func(argv []string, out []byte) []byte
}

func (s *localSandbox) ContainerID() string { return "local" }

func (s *localSandbox) Exec(ctx context.Context, c workspace.Command) (workspace.Result, error) {
	argv := slices.Clone(c.Argv)
	if i := slices.Index(argv, workspace.Dir); i > 0 && argv[i-1] == "--dir" {
		argv[i] = s.dir
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdin = c.Stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return workspace.Result{}, err
	}
	out := stdout.Bytes()
	if s.rewrite != nil {
		out = s.rewrite(c.Argv, out)
	}
	res := workspace.Result{ExitCode: cmd.ProcessState.ExitCode(), Stderr: stderr.Bytes()}
	if c.Stdout != nil {
		_, err := c.Stdout.Write(out)
		return res, err
	}
	if c.MaxOutput > 0 && len(out) > c.MaxOutput {
		out, res.Truncated = out[:c.MaxOutput], true
	}
	res.Stdout = out
	return res, nil
}

// localSetup is a project, a local sandbox and a workspace joining them.
type localSetup struct {
	t       *testing.T
	project string
	sb      *localSandbox
	ws      *workspace.Workspace
}

func newLocal(t *testing.T) *localSetup {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on this machine")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on this machine")
	}
	tmp := t.TempDir()
	l := &localSetup{t: t, project: filepath.Join(tmp, "project"), sb: &localSandbox{dir: filepath.Join(tmp, "workspace")}}
	for _, d := range []string{l.project, l.sb.dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l.ws = workspace.New(l.sb, l.project, workspace.Options{Program: resources.WorkspaceProgram(), StateDir: filepath.Join(tmp, "state")})
	return l
}

func (l *localSetup) sync() workspace.Synced {
	l.t.Helper()
	res, err := l.ws.Sync(context.Background(), nil)
	if err != nil {
		l.t.Fatal(err)
	}
	return res
}

// task stands for a task: it changes the workspace with fn, then saves
// the change as the sidecar does when a task ends.
func (l *localSetup) task(base string, fn func(dir string)) string {
	l.t.Helper()
	fn(l.sb.dir)
	commit, err := l.ws.SaveTask(context.Background(), "t1", base)
	if err != nil {
		l.t.Fatal(err)
	}
	return commit
}

func (l *localSetup) read(rel string) string {
	l.t.Helper()
	data, err := os.ReadFile(filepath.Join(l.project, rel))
	if err != nil {
		l.t.Fatal(err)
	}
	return string(data)
}

// leftovers lists apply's temporary files left in the project.
func (l *localSetup) leftovers() []string {
	var found []string
	filepath.WalkDir(l.project, func(p string, d os.DirEntry, err error) error {
		if err == nil && len(d.Name()) > 13 && d.Name()[:13] == ".pilot-apply-" {
			found = append(found, p)
		}
		return nil
	})
	return found
}
