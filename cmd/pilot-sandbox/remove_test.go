package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// openPTY opens a pseudo-terminal: what a person types goes into master,
// and a program reads it from slave, which is a terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestRemoveSaysWhatItDeletesAndAsksOnATerminal: remove names what goes
// with the sandbox; on a terminal it deletes nothing without a yes;
// elsewhere (a script) it goes on. remove --container of a missing one
// fails.
func TestRemoveSaysWhatItDeletesAndAsksOnATerminal(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	if _, errOut, code := cliRun(t, env, "", "start", "--project", project); code != 0 {
		t.Fatalf("start: %d %s", code, errOut)
	}
	master, slave := openPTY(t)
	if _, err := master.WriteString("n\n"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "remove", "--project", project)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = slave
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("remove answered no: %v: %s", err, out.String())
	}
	if s := out.String(); !strings.Contains(s, "This deletes the sandbox of "+project) || !strings.Contains(s, "[y/N]") || !strings.Contains(s, "Nothing removed.") {
		t.Errorf("remove on a terminal said %q; want what it deletes, the question, and nothing removed", s)
	}
	if list, _ := docker.ListContainers(t.Context(), map[string]string{service.LabelProject: project}); len(list) != 1 {
		t.Fatalf("after no: %d containers; want the sandbox kept", len(list))
	}

	stdout, errOut, code := cliRun(t, env, "", "remove", "--project", project)
	if code != 0 || !strings.Contains(stdout, "This deletes the sandbox of "+project) || !strings.Contains(stdout, "Removed the sandbox") {
		t.Errorf("remove without a terminal (%d): %s %s", code, stdout, errOut)
	}
	if list, _ := docker.ListContainers(t.Context(), map[string]string{service.LabelProject: project}); len(list) != 0 {
		t.Errorf("after remove: %d containers", len(list))
	}

	stdout, errOut, code = cliRun(t, env, "", "remove", "--container", "pilot-no-such-container")
	if code == 0 || !strings.Contains(errOut, "no sandbox container") {
		t.Errorf("remove --container of a missing one (%d): %s %s; want a failure saying so", code, stdout, errOut)
	}
}

// status in text says why the policy stopped a sandbox, as --json does.
func TestStatusSaysWhyItStopped(t *testing.T) {
	var out bytes.Buffer
	c := &cli{env: &env{stdout: &out}, project: "/p"}
	c.printState(&service.State{ProjectPath: "/p", Status: service.StatusStopped, StopReason: "stopped after 30m idle"})
	if !strings.Contains(out.String(), "  reason     stopped after 30m idle\n") {
		t.Errorf("status said %q; want why it stopped", out.String())
	}
}
