package resources_test

import (
	"os/exec"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

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
	m, project := startedSandbox(t)
	pythonSuite{what: "the relay", dir: "/tmp/relay-tests", files: map[string][]byte{
		"pilot_relay.py": []byte(resources.Relay()), "test_relay.py": readFile(t, "relay/test_relay.py"),
	}}.run(t, m, project)
}
