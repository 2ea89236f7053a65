package resources_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// agentTestDir is where the agent and its tests go in the sandbox.
const agentTestDir = "/tmp/agent-tests"

// TestAgentPython runs the desktop agent's Python tests (agent/test_*.py) in
// a sandbox, where the image has what the agent uses: python3, Xvfb, xclip,
// libX11 and libXtst. Each X test starts its own Xvfb, so the sandbox's
// desktop is not touched; PILOT_AGENT_REQUIRE_X makes a missing Xvfb a
// failure there rather than a skip. The agent is the one this package
// embeds; the tests and the contract come from the source tree.
func TestAgentPython(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	project := dockertest.Project(t, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, project); err != nil {
		t.Fatal(err)
	}
	res, err := m.ExecArgv(ctx, project, service.ExecSpec{
		Cmd:     []string{"tar", "-x", "-C", path.Dir(agentTestDir)},
		Stdin:   agentTestFiles(t),
		Timeout: time.Minute,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("copy the tests in: %v (exit %d) %s", err, res.ExitCode, res.Stderr)
	}
	res, err = m.ExecArgv(ctx, project, service.ExecSpec{
		Cmd:     []string{"python3", "-B", "-m", "unittest", "-v"},
		WorkDir: agentTestDir,
		Env:     []string{"PILOT_AGENT_REQUIRE_X=1"},
		Timeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("the agent's Python tests failed (exit %d, timed out %v):\n%s", res.ExitCode, res.TimedOut, out)
	}
	if skipped := regexp.MustCompile(`(?m)^OK \(skipped=\d+\)$`).FindString(out); skipped != "" {
		t.Fatalf("the agent's Python tests skipped some in the sandbox image (%s):\n%s", skipped, out)
	}
	t.Log(lastLines(out, 3))
}

// agentTestFiles is a tar of the agent and its tests, under agentTestDir's
// name.
func agentTestFiles(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, data []byte) {
		hdr := &tar.Header{Name: path.Join(path.Base(agentTestDir), name), Mode: 0o644, Size: int64(len(data))}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: path.Base(agentTestDir) + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		t.Fatal(err)
	}
	add("agent.py", resources.DesktopAgent())
	err := fs.WalkDir(os.DirFS("agent"), ".", func(name string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && name == "__pycache__":
			return fs.SkipDir
		case e.IsDir():
			if name != "." {
				return tw.WriteHeader(&tar.Header{Name: path.Join(path.Base(agentTestDir), name) + "/", Mode: 0o755, Typeflag: tar.TypeDir})
			}
			return nil
		case name == "agent.py":
			return nil // the embedded one is added above
		}
		data, err := os.ReadFile(path.Join("agent", name))
		if err == nil {
			add(name, data)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
