package resources_test

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path"
	"regexp"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// relayTestDir is where the relay and its tests go in the sandbox.
const relayTestDir = "/tmp/relay-tests"

// TestRelayPython runs the relay's Python tests (relay/test_relay.py) on
// this machine's python3: they need only a loopback, and take a second.
func TestRelayPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on this machine: TestRelayPythonInSandbox runs them")
	}
	cmd := exec.Command(python, "-B", "-m", "unittest")
	cmd.Dir = "relay"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the relay's Python tests failed: %v\n%s", err, out)
	}
	t.Log(lastLines(string(out), 3))
}

// TestRelayPythonInSandbox runs them in a sandbox, on the image's Python,
// against the relay this package embeds, as the sandbox user.
func TestRelayPythonInSandbox(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	project := dockertest.Project(t, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, project); err != nil {
		t.Fatal(err)
	}
	res, err := m.ExecArgv(ctx, project, service.ExecSpec{
		Cmd:     []string{"tar", "-x", "-C", path.Dir(relayTestDir)},
		Stdin:   relayTestFiles(t),
		Timeout: time.Minute,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("copy the tests in: %v (exit %d) %s", err, res.ExitCode, res.Stderr)
	}
	res, err = m.ExecArgv(ctx, project, service.ExecSpec{
		Cmd:     []string{"python3", "-B", "-m", "unittest", "-v"},
		WorkDir: relayTestDir,
		Timeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("the relay's Python tests failed (exit %d, timed out %v):\n%s", res.ExitCode, res.TimedOut, out)
	}
	if skipped := regexp.MustCompile(`(?m)^OK \(skipped=\d+\)$`).FindString(out); skipped != "" {
		t.Fatalf("the relay's Python tests skipped some in the sandbox image (%s):\n%s", skipped, out)
	}
	t.Log(lastLines(out, 3))
}

// relayTestFiles is a tar of the embedded relay and its tests, under
// relayTestDir's name.
func relayTestFiles(t *testing.T) *bytes.Buffer {
	t.Helper()
	tests, err := os.ReadFile("relay/test_relay.py")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := path.Base(relayTestDir)
	if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"pilot_relay.py": []byte(resources.Relay()), "test_relay.py": tests} {
		if err := tw.WriteHeader(&tar.Header{Name: path.Join(dir, name), Mode: 0o644, Size: int64(len(data))}); err != nil {
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
