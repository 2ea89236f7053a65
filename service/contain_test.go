package service_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// cgroupLimits prints the limits the kernel enforces on the sandbox, as
// the sandbox sees them (cgroup v1 paths first, then v2): memory, CPU
// quota and period, processes, then /dev/shm's size.
const cgroupLimits = `cd /sys/fs/cgroup
cat memory/memory.limit_in_bytes 2>/dev/null || cat memory.max
cat cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us 2>/dev/null | paste -sd/ || cut -d' ' -f1,2 --output-delimiter=/ cpu.max
cat pids/pids.max 2>/dev/null || cat pids.max
df -B1 --output=size /dev/shm | tail -1 | tr -d ' '`

// TestProjectLimitsReachTheKernel sets every limit in the project's
// settings and reads them back from inside the sandbox; a change applies
// at the next start, without a new container.
func TestProjectLimitsReachTheKernel(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	settings := func(sandbox string) {
		os.MkdirAll(filepath.Join(dir, ".pilot"), 0o755)
		os.WriteFile(filepath.Join(dir, ".pilot", "settings.json"), []byte(`{"sandbox": `+sandbox+`}`), 0o644)
	}
	settings(`{"memory": "768m", "cpus": 1, "processes": 200, "shmSize": "128m", "display": {"width": 1024, "height": 768}}`)
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d\n100000/100000\n200\n%d\n", 768<<20, 128<<20)
	if got := exec(t, m, dir, cgroupLimits).Stdout; got != want {
		t.Errorf("limits inside:\n%s\nwant\n%s", got, want)
	}
	if out := exec(t, m, dir, "xdpyinfo | grep dimensions").Stdout; !strings.Contains(out, "1024x768 pixels") || st.Display != (desktop.Display{Width: 1024, Height: 768}) {
		t.Errorf("display: %s, state %+v", out, st.Display)
	}

	if _, err := m.Stop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	settings(`{"memory": "1g", "cpus": 0.5, "processes": 300, "shmSize": "128m", "display": {"width": 1024, "height": 768}}`)
	again, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprintf("%d\n50000/100000\n300\n%d\n", 1<<30, 128<<20)
	if got := exec(t, m, dir, cgroupLimits).Stdout; got != want || again.ContainerID != st.ContainerID {
		t.Errorf("after a change and a restart (same container: %v):\n%s\nwant\n%s", again.ContainerID == st.ContainerID, got, want)
	}
}

// TestForkFloodIsContained runs fork bombs in a sandbox with the default
// limits: a shell one whose first shell exits at once (so the command's
// timeout does not end it), and one that puts every process in a session
// of its own. Each fills the sandbox's process slots and no more; what
// already runs keeps working meanwhile (the desktop agent takes
// screenshots, the sidecar answers); within seconds pilot-pidguard kills
// every process of the flood, and the sandbox works as before.
func TestForkFloodIsContained(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Screenshot(ctx, dir); err != nil { // the agent is running
		t.Fatal(err)
	}
	s := &flooded{t: t, m: m, api: dockertest.NewAPI(t), dir: dir, st: st}
	s.baseline = s.api.Stats(st.ContainerID).Pids
	for _, tc := range []struct {
		bomb string
		// agentLives: the flood is one process group, which is all that
		// is killed; otherwise everything outside the desktop is, the
		// desktop agent too (the next call starts another).
		agentLives bool
	}{
		{`bomb() { bomb | bomb & }; bomb`, true},
		{`python3 -c 'import os
while True:
    try:
        if os.fork() == 0:
            os.setsid()
    except OSError:
        pass' &`, false},
	} {
		if !s.survives(tc.bomb, tc.agentLives) {
			return
		}
	}
	// pilot-pidguard runs as the sandbox user, whose output cannot reach
	// the container's log: it writes its own.
	if got := exec(t, m, dir, "cat /tmp/pilot-pidguard.log").Stdout; !strings.Contains(got, "killed process group") || !strings.Contains(got, "killed every process outside the desktop") {
		t.Errorf("the container's log does not say what pilot-pidguard did:\n%s", got)
	}
}

// flooded is a running sandbox a test floods with processes.
type flooded struct {
	t        *testing.T
	m        *service.Manager
	api      *dockertest.API
	dir      string
	st       service.State
	baseline int64 // its processes before any flood
}

// survives runs a fork bomb in the sandbox and checks that it fills the
// process slots and no more, that what runs keeps working meanwhile (the
// desktop agent too if agentLives), and that within seconds the flood is
// gone and the sandbox works as before. It returns false if the flood
// never filled the slots.
func (s *flooded) survives(bomb string, agentLives bool) bool {
	t, m, dir, id := s.t, s.m, s.dir, s.st.ContainerID
	t.Helper()
	limit := service.DefaultLimits.PidsLimit
	// pilot-pidguard acts once the count has stayed within limit/16 of
	// the limit for 3 s; a flood of short-lived processes may hover in
	// that band without touching the limit, so that band is what counts
	// as full here, and the kernel's count of refused forks proves the
	// limit itself was reached.
	fullAt := limit - limit/16
	refused := forksRefused(t, m, dir)
	exec(t, m, dir, bomb+" >/dev/null 2>&1")
	started := time.Now()
	if !pollUntil(t, "the flood fills the process slots", func() bool { return s.api.Stats(id).Pids >= fullAt }) {
		return false
	}
	full := time.Now()
	// The limit stops forks; a process joining the cgroup from outside
	// (a docker exec, the probes of this test) is let in beyond it, so
	// the count may pass it by a few.
	if pids := s.api.Stats(id).Pids; pids > limit+16 {
		t.Errorf("%d processes, well over the limit of %d", pids, limit)
	}
	ctx := context.Background()
	if _, err := m.Screenshot(ctx, dir); err != nil && agentLives {
		t.Errorf("screenshot during the flood: %v", err)
	}
	if st, err := m.Status(ctx, dir); err != nil || st.Status != service.StatusRunning {
		t.Errorf("status during the flood: %+v, %v", st, err)
	}
	pollUntil(t, "the flood's processes are gone", func() bool { return s.api.Stats(id).Pids <= s.baseline+2 })
	t.Logf("the flood filled the sandbox in %s and ended %s later", full.Sub(started).Round(time.Millisecond), time.Since(full).Round(time.Millisecond))
	if now := forksRefused(t, m, dir); now <= refused {
		t.Errorf("the kernel refused no fork (%d before, %d after): the flood never reached the limit", refused, now)
	}
	assertDesktopWorks(t, m, dir, s.st)
	return true
}

// TestMemoryHogIsContained allocates more than the sandbox's 2 GiB: the
// kernel kills the allocating process, and only it; the desktop lives on,
// and a later stop is a stop, not an out-of-memory error.
func TestMemoryHogIsContained(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Screenshot(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if out := exec(t, m, dir, "cat /proc/self/oom_score_adj"); out.Stdout != "500\n" {
		t.Errorf("a command's OOM score adjustment: %q, want 500 (killed before the desktop)", out.Stdout)
	}
	out := exec(t, m, dir, `python3 -c 'hog = b"x" * (3 << 30); print("allocated")'`)
	if out.ExitCode != 137 || strings.Contains(out.Stdout, "allocated") {
		t.Errorf("the hog was not killed: %+v", out)
	}
	ooms := `cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || cat /sys/fs/cgroup/memory.events`
	if out := exec(t, m, dir, ooms).Stdout; !strings.Contains(out, "oom_kill 1\n") {
		t.Errorf("the kernel's OOM killer did not act once in the sandbox:\n%s", out)
	}
	if out := exec(t, m, dir, "pgrep -x Xvfb && pgrep -x x11vnc && pgrep -x fluxbox").ExitCode; out != 0 {
		t.Error("a desktop process was killed instead of the hog")
	}
	assertDesktopWorks(t, m, dir, st)
	stopped, err := m.Stop(ctx, dir)
	if err != nil || stopped.Status != service.StatusStopped || stopped.Error != "" {
		t.Errorf("stop after the hog: %+v, %v", stopped, err)
	}
}

// forksRefused reads how many forks the sandbox's process limit has
// refused so far (the max count of pids.events; cgroup v1 path first).
func forksRefused(t *testing.T, m *service.Manager, dir string) int {
	t.Helper()
	out := exec(t, m, dir, "cat /sys/fs/cgroup/pids/pids.events 2>/dev/null || cat /sys/fs/cgroup/pids.events").Stdout
	var n int
	if _, err := fmt.Sscanf(out, "max %d", &n); err != nil {
		t.Fatalf("pids.events: %q: %v", out, err)
	}
	return n
}

// assertDesktopWorks checks a sandbox as a user would: running, its viewer
// answers, its display and execs work.
func assertDesktopWorks(t *testing.T, m *service.Manager, dir string, st service.State) {
	t.Helper()
	ctx := context.Background()
	if s, err := m.Status(ctx, dir); err != nil || s.Status != service.StatusRunning || s.ContainerID != st.ContainerID {
		t.Errorf("status: %+v, %v", s, err)
	}
	if err := desktop.Probe(ctx, "127.0.0.1", st.WSPort, viewerPage); err != nil {
		t.Errorf("viewer: %v", err)
	}
	if shot, err := m.Screenshot(ctx, dir); err != nil || shot.Width != st.Display.Width {
		t.Errorf("screenshot: %v", err)
	}
	if out := exec(t, m, dir, "echo alive"); out.Stdout != "alive\n" {
		t.Errorf("exec: %+v", out)
	}
}

// pollUntil polls cond every 100 ms for up to a minute; it reports (and
// returns false) if cond never held.
func pollUntil(t *testing.T, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("%s: not within a minute", what)
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}
