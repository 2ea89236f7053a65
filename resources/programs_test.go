package resources_test

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestWorkspaceAndRunnerPython runs the unit tests of the workspace
// program and the task runner in a sandbox, with the image's Python,
// git and /proc: the embedded programs, their tests from the source tree.
func TestWorkspaceAndRunnerPython(t *testing.T) {
	m, project := startedSandbox(t)
	for _, p := range []struct {
		dir, name string
		source    []byte
	}{
		{"workspace", "workspace.py", resources.WorkspaceProgram()},
		{"tasks", "runner.py", resources.TaskRunner()},
	} {
		t.Run(p.dir, func(t *testing.T) {
			tests, _ := filepath.Glob(filepath.Join(p.dir, "test_*.py"))
			if len(tests) == 0 {
				t.Fatalf("%s has no tests", p.dir)
			}
			files := map[string][]byte{p.name: p.source}
			for _, file := range tests {
				files[filepath.Base(file)] = readFile(t, file)
			}
			pythonSuite{what: p.dir, dir: "/tmp/python-tests/" + p.dir, files: files}.run(t, m, project)
		})
	}
}

// startedSandbox is a running sandbox of a project of the test's own.
func startedSandbox(t *testing.T) (*service.Manager, string) {
	t.Helper()
	m, docker := dockertest.Manager(t, nil)
	project := dockertest.Project(t, docker)
	if _, err := m.Start(context.Background(), project); err != nil {
		t.Fatal(err)
	}
	return m, project
}

// pythonSuite is a program's Python unit tests as they run in a sandbox,
// as the sandbox user: on the image's Python, against the program this
// package embeds (or the image carries), the tests from the source tree.
type pythonSuite struct {
	what  string            // whose tests, for messages: "the relay"
	dir   string            // where they go in the sandbox
	files map[string][]byte // what goes there (slash-separated names): the program and its tests
	env   []string
	// timeout bounds the run, against a hang (5 minutes when 0).
	timeout time.Duration
}

// run copies the suite's files in and runs python3 -m unittest there: a
// failure, a run past its timeout or a test skipped in the image fails t.
func (s pythonSuite) run(t *testing.T, m *service.Manager, project string) {
	t.Helper()
	ctx := context.Background()
	res, err := m.ExecArgv(ctx, project, service.ExecSpec{
		Cmd:   []string{"sh", "-c", `mkdir -p "$1" && tar -x -C "$1"`, "sh", s.dir},
		Stdin: tarOf(t, s.files), Timeout: time.Minute,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("copy %s's tests in: %v (exit %d) %s", s.what, err, res.ExitCode, res.Stderr)
	}
	res, err = m.ExecArgv(ctx, project, service.ExecSpec{
		Cmd: []string{"python3", "-B", "-m", "unittest", "-v"}, WorkDir: s.dir, Env: s.env, Timeout: cmp.Or(s.timeout, 5*time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("%s's Python tests failed (exit %d, timed out %v):\n%s", s.what, res.ExitCode, res.TimedOut, out)
	}
	if skipped := regexp.MustCompile(`(?m)^OK \(skipped=\d+\)$`).FindString(out); skipped != "" {
		t.Fatalf("%s's Python tests skipped some in the sandbox image (%s):\n%s", s.what, skipped, out)
	}
	t.Log(lastLines(out, 3))
}

// tarOf is a tar of files, each under its name (its directories made as
// tar extracts it).
func tarOf(t *testing.T, files map[string][]byte) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// treeOf is every file under dir of the source tree, by its
// slash-separated name in dir, but Python's caches.
func treeOf(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(name string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && name == "__pycache__":
			return fs.SkipDir
		case e.IsDir():
			return nil
		}
		data, err := os.ReadFile(path.Join(dir, name))
		files[name] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
