package resources_test

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"regexp"
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
	m, docker := dockertest.Manager(t, nil)
	project := dockertest.Project(t, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, project); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		dir, name string
		source    []byte
	}{
		{"workspace", "workspace.py", resources.WorkspaceProgram()},
		{"tasks", "runner.py", resources.TaskRunner()},
	} {
		t.Run(p.dir, func(t *testing.T) {
			runPythonTests(t, m, project, p.dir, p.name, p.source)
		})
	}
}

// runPythonTests copies dir's test_*.py and its embedded program (name,
// source) into the sandbox and runs them.
func runPythonTests(t *testing.T, m *service.Manager, project, dir, name string, program []byte) {
	ctx := context.Background()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, data []byte) {
		tw.WriteHeader(&tar.Header{Name: path.Join(dir, name), Mode: 0o644, Size: int64(len(data))})
		tw.Write(data)
	}
	tests, _ := filepath.Glob(filepath.Join(dir, "test_*.py"))
	if len(tests) == 0 {
		t.Fatalf("%s has no tests", dir)
	}
	tw.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, Typeflag: tar.TypeDir})
	add(name, program)
	for _, file := range tests {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		add(filepath.Base(file), data)
	}
	tw.Close()
	base := "/tmp/python-tests"
	res, err := m.ExecArgv(ctx, project, service.ExecSpec{Cmd: []string{"sh", "-c", "mkdir -p " + base + " && tar -x -C " + base}, Stdin: &buf, Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("copy the tests in: %v %s", err, res.Stderr)
	}
	res, err = m.ExecArgv(ctx, project, service.ExecSpec{
		Cmd: []string{"python3", "-B", "-m", "unittest", "-v"}, WorkDir: path.Join(base, dir), Timeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	if res.ExitCode != 0 || res.TimedOut || regexp.MustCompile(`(?m)^OK \(skipped=\d+\)$`).MatchString(out) {
		t.Fatalf("%s's Python tests failed or skipped some (exit %d):\n%s", dir, res.ExitCode, out)
	}
	t.Log(lastLines(out, 3))
}
