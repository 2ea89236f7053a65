package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// pilot-sandbox start of a project asking limits above the caps, without
// a terminal, says to run pilot-sandbox approve; approve shows the request
// and wants --yes without a terminal; approve --yes records it in the
// user's state, and start then works.
func TestCommandLineApproves(t *testing.T) {
	docker := dockertest.Engine(t)
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	dir := dockertest.Project(t, docker)
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	os.WriteFile(projectfs.SettingsFile(dir), []byte(`{"sandbox": {"memory": "5g"}}`), 0o644)

	_, errOut, code := cliRun(t, env, "y\n", "start", "--project", dir)
	if code != 1 || !strings.Contains(errOut, "memory 5g (your cap 4GiB)") || !strings.Contains(errOut, "pilot-sandbox approve --project "+dir) {
		t.Fatalf("start without a terminal: %d %s", code, errOut)
	}
	out, errOut, code := cliRun(t, env, "y\n", "approve", "--project", dir)
	if code != 1 || !strings.Contains(out, "asks to run its sandbox with memory 5g") || !strings.Contains(errOut, "pilot-sandbox approve --yes") {
		t.Fatalf("approve without a terminal: %d %s %s", code, out, errOut)
	}
	if n := approvalFiles(state); n != 0 {
		t.Fatalf("approve without a yes recorded %d files", n)
	}
	out, errOut, code = cliRun(t, env, "", "approve", "--yes", "--project", dir)
	if code != 0 || !strings.Contains(out, "Approved") {
		t.Fatalf("approve --yes: %d %s %s", code, out, errOut)
	}
	if n := approvalFiles(state); n != 1 {
		t.Errorf("approvals kept: %d files, want 1", n)
	}
	if out, _, code := cliRun(t, env, "", "approve", "--project", dir); code != 0 || !strings.Contains(out, "asks for nothing that needs your approval") {
		t.Errorf("approve again: %d %s", code, out)
	}
	if out, errOut, code := cliRun(t, env, "", "start", "--project", dir); code != 0 || !strings.Contains(out, ": running") {
		t.Errorf("start after approval: %d %s %s", code, out, errOut)
	}
}

// On a terminal, approve shows the request and records it after a y, and
// a start asks the same; a no records nothing. (script(1) gives the
// command a terminal.)
func TestCommandLineApprovesOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give the command a terminal")
	}
	state := t.TempDir()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	os.WriteFile(projectfs.SettingsFile(dir), []byte(`{"sandbox": {"processes": 9000}}`), 0o644)
	onTerminal := func(answer string) (string, int) {
		cmd := exec.Command("script", "-q", "-e", "-c", binary+" approve --project "+dir, "/dev/null")
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
		cmd.Stdin = strings.NewReader(answer)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := onTerminal("n\n")
	if code == 0 || !strings.Contains(out, "processes 9000 (your cap 4096)") || !strings.Contains(out, "Approve this? [y/N]") {
		t.Fatalf("approve, answered no: %d %s", code, out)
	}
	if n := approvalFiles(state); n != 0 {
		t.Fatalf("a no recorded %d files", n)
	}
	out, code = onTerminal("y\n")
	if code != 0 || !strings.Contains(out, "Approved") {
		t.Fatalf("approve, answered yes: %d %s", code, out)
	}
	if n := approvalFiles(state); n != 1 {
		t.Errorf("a yes kept %d files, want 1", n)
	}
}

// approvalFiles counts the approval files under the state directory.
func approvalFiles(state string) int {
	files, _ := filepath.Glob(filepath.Join(state, "pilot-sandbox", "approvals", "*.json"))
	return len(files)
}

// pilot-sandbox approve shows what it asks to approve, all of it: a
// Dockerfile's text, the files it copies, its warnings; after a change,
// what changed since the approval.
func TestCommandLineShowsWhatItApproves(t *testing.T) {
	dockertest.Engine(t)
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	os.WriteFile(projectfs.SettingsFile(dir), []byte(`{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`), 0o644)
	write := func(name, text string) { os.WriteFile(filepath.Join(dir, projectfs.Dir, name), []byte(text), 0o644) }
	write("Dockerfile", "ARG PILOT_BASE\nFROM ${PILOT_BASE}\nCOPY tool.sh /usr/local/bin/\nARG API=http://localhost:3000\n")
	write("tool.sh", "echo tool\n")
	out, _, code := cliRun(t, env, "", "approve", "--project", dir)
	for _, want := range []string{
		"  What it asks:\n    ARG PILOT_BASE\n    FROM ${PILOT_BASE}\n    COPY tool.sh /usr/local/bin/\n",
		"  File .pilot/tool.sh (10 bytes):\n    echo tool\n",
		"  Warnings (what reaches beyond the project):\n    line 4: ARG names localhost, an address of this machine or its network\n",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("approve without a terminal (%d) does not show\n%s\nin\n%s", code, want, out)
		}
	}
	if _, _, code := cliRun(t, env, "", "approve", "--yes", "--project", dir); code != 0 {
		t.Fatalf("approve --yes: %d", code)
	}
	write("tool.sh", "echo tool, changed\n")
	out, _, _ = cliRun(t, env, "", "approve", "--project", dir)
	if !strings.Contains(out, "  Changed since you last approved it:\n") || !strings.Contains(out, "    -echo tool\n") ||
		!strings.Contains(out, "    +echo tool, changed\n") {
		t.Errorf("approve after a change does not show the change:\n%s", out)
	}
}

// A repository's network policy wider than the user's is shown, rule by
// rule, before the approval is asked; a narrowing one asks nothing.
func TestCommandLineApprovesANetworkPolicy(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give the command a terminal")
	}
	state, config := t.TempDir(), t.TempDir()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	settings := func(network string) {
		os.WriteFile(projectfs.SettingsFile(dir), []byte(`{"sandbox": {"network": `+network+`}}`), 0o644)
	}
	env := []string{"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + config}
	settings(`{"preset": "locked", "deny": ["tracker.example"]}`)
	if out, _, code := cliRun(t, env, "", "approve", "--project", dir); code != 0 || !strings.Contains(out, "asks for nothing") {
		t.Fatalf("a narrowing policy: %d %s", code, out)
	}
	settings(`{"preset": "open", "allow": ["api.example.com:443"]}`)
	cmd := exec.Command("script", "-q", "-e", "-c", binary+" approve --project "+dir, "/dev/null")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader("y\n")
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{
		"asks to let its sandbox reach any destination not denied (preset open, wider than your dev); and connect without asking to api.example.com:443.",
		"    preset open (yours is dev)",
		"    allow api.example.com:443",
		"Approve this? [y/N]",
		"Approved",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("approve on a terminal lacks %q:\n%s", want, out)
		}
	}
	if n := approvalFiles(state); n != 1 {
		t.Errorf("approvals kept: %d files, want 1", n)
	}
}
