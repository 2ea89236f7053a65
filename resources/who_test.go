package resources_test

import (
	"os/exec"
	"testing"
)

// TestWhoPython runs the connection finder's Python tests
// (hints/test_who.py) on this machine's python3: a connection of their
// own, looked up through /proc; the egress tests run the program in a
// sandbox.
func TestWhoPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on this machine: egress's TestAQuestionNamesItsCause runs the program in a sandbox")
	}
	cmd := exec.Command(python, "-B", "-W", "error::ResourceWarning", "-m", "unittest")
	cmd.Dir = "hints"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the connection finder's Python tests failed: %v\n%s", err, out)
	}
	t.Log(lastLines(string(out), 3))
}
