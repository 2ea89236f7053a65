package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestTheCLIUnderLoad is issue 26's "a CLI that never stumbles": with a
// hundred busy processes on the host, `status` and `exec -- true` on a
// running sandbox succeed every time (they failed with "not running (it
// is starting)" when the desktop's probe was slow). A command needs the
// container running, not the desktop's readiness (service/state.go,
// commandTarget).
//
// Its load starves whatever runs beside it (a sandbox of another
// package's test did not start within 90 s): it runs only when
// PILOT_LOAD_TEST=1, which scripts/test.sh sets for a run of this test
// alone, after the other packages.
func TestTheCLIUnderLoad(t *testing.T) {
	if os.Getenv("PILOT_LOAD_TEST") != "1" {
		t.Skip("runs alone, after the other packages: scripts/test.sh runs it with PILOT_LOAD_TEST=1")
	}
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	env := append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Env, cmd.Dir = env, project
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cli("start"); err != nil {
		t.Fatalf("start: %v: %s", err, out)
	}
	spin(t, 100, 5*time.Minute)
	for i := range 3 {
		began := time.Now()
		out, err := cli("status")
		if err != nil || !strings.Contains(out, ": running") {
			t.Errorf("status %d under load: %v: %s", i, err, out)
		}
		took := time.Since(began)
		began = time.Now()
		if out, err := cli("exec", "--", "true"); err != nil {
			t.Errorf("exec -- true %d under load: %v: %s", i, err, out)
		}
		t.Logf("under load: status %s, exec -- true %s", took.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average: %s", strings.TrimSpace(string(load)))
	}
}

// spin starts n busy shells on the host, each its own process group,
// killed when the test ends and by timeout(1) after at most bound.
func spin(t *testing.T, n int, bound time.Duration) {
	var pids []int
	for range n {
		cmd := exec.Command("timeout", strconv.Itoa(int(bound.Seconds())), "sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		})
		pids = append(pids, cmd.Process.Pid)
	}
	time.Sleep(time.Second)
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			t.Fatalf("busy process %d is not running: %v %s", pid, err, stat)
		}
	}
}
