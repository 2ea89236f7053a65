package service

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
)

// A container started outside the sidecar (or found running) is starting
// until its desktop answers, then running, announced by Run on its own; one
// that never answers is an error that says what to do.
func TestOutsideStartIsRunningOnlyOnceTheDesktopAnswers(t *testing.T) {
	var answering atomic.Bool
	var silentPort atomic.Int64
	h := newHarness(t, func(c *Config) {
		c.ResyncInterval = time.Hour
		c.ReadyTimeout = 500 * time.Millisecond
		c.Probe = func(_ context.Context, wsPort int, _, _ string) error {
			if answering.Load() && int64(wsPort) != silentPort.Load() {
				return nil
			}
			return errors.New("connection refused")
		}
	})
	answers, silent := project(t), project(t)
	h.docker.addContainer(answers, true, 0, desktop.Secret{Control: "ctrl1234", View: "view1234"})
	silentPort.Store(int64(h.docker.addContainer(silent, true, 0, desktop.Secret{Control: "ctrl1234", View: "view1234"}).Ports[desktop.NoVNCPort]))
	h.docker.events = make(chan ContainerEvent)
	h.run()

	want := map[string][]Status{answers: {StatusStarting, StatusRunning}, silent: {StatusStarting, StatusError}}
	got := map[string][]Status{}
	var silentErr string
	deadline := time.After(10 * time.Second)
	for len(got[answers]) < 2 || len(got[silent]) < 2 {
		select {
		case ev := <-h.events:
			if ev.Kind != EventState || ev.State == nil {
				continue
			}
			got[ev.Project] = append(got[ev.Project], ev.State.Status)
			if ev.Project == silent && ev.State.Status == StatusError {
				silentErr = ev.State.Error
			}
			if ev.Project == answers && ev.State.Status == StatusStarting {
				if ev.State.ViewerURL != "" || ev.State.WSPort != 0 {
					t.Errorf("a starting sandbox hands out its viewer: %+v", ev.State)
				}
				answering.Store(true) // the desktop comes up now
			}
		case <-deadline:
			t.Fatalf("events so far: %v", got)
		}
	}
	for project, statuses := range want {
		if strings.Join(statusNames(got[project][:2]), ",") != strings.Join(statusNames(statuses), ",") {
			t.Errorf("%s went through %v, want %v", project, got[project], statuses)
		}
	}
	if !strings.Contains(silentErr, "did not answer") || !strings.Contains(silentErr, "restart the sandbox") {
		t.Errorf("error of a desktop that never answered: %q", silentErr)
	}
}

func statusNames(s []Status) []string {
	var out []string
	for _, x := range s {
		out = append(out, string(x))
	}
	return out
}

// A command needs the container running, not the desktop's readiness: a
// running sandbox whose desktop does not answer (yet, or a probe slow
// under load) runs it, as docker exec would, and is not probed for it
// (issue 26: the CLI's exec failed with "not running (it is starting)").
func TestACommandDoesNotWaitForTheDesktop(t *testing.T) {
	var probes atomic.Int64
	h := newHarness(t, func(c *Config) {
		c.Probe = func(context.Context, int, string, string) error {
			probes.Add(1)
			return errors.New("connection refused")
		}
	})
	dir := project(t)
	c := h.docker.addContainer(dir, true, 0, desktop.Secret{Control: "ctrl1234", View: "view1234"})
	out, err := h.m.Exec(context.Background(), dir, ExecRequest{Argv: []string{"true"}})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("exec on a running sandbox whose desktop does not answer = %+v, %v", out, err)
	}
	if n := probes.Load(); n != 0 {
		t.Errorf("the exec probed the desktop %d times", n)
	}
	st, err := h.m.Status(context.Background(), dir)
	if err != nil || st == nil || st.Status != StatusStarting {
		t.Errorf("status after = %+v, %v; want starting (the desktop is not proven)", st, err)
	}
	h.docker.kill(c.ID, 0)
	if _, err := h.m.Exec(context.Background(), dir, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("exec on a stopped sandbox: err = %v, want ErrNotRunning", err)
	}
}

// A run one process of the user's saw answer is ready for the user's
// others without a probe of their own (readiness.Marks): the CLI's
// status beside the app's sidecar said "starting" of a running sandbox
// when the load made its probe slower than ProbeTimeout (issue 26). A
// process of another state directory, or a later run of the container,
// is probed as before.
func TestAnotherProcessTakesARunAlreadySeenReady(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	started, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	status := func(stateDir string) Status {
		t.Helper()
		m := otherProcess(t, h.docker, stateDir, nil)
		st, err := m.Status(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		return st.Status
	}
	if got := status(h.m.StateDir()); got != StatusRunning {
		t.Errorf("beside the sidecar that started it: %s, want running", got)
	}
	if got := status(t.TempDir()); got != StatusStarting {
		t.Errorf("with another user's state: %s, want starting (probed)", got)
	}
	if err := h.docker.StopContainer(context.Background(), started.ContainerID, 0); err != nil {
		t.Fatal(err)
	}
	if err := h.docker.StartContainer(context.Background(), started.ContainerID); err != nil {
		t.Fatal(err)
	}
	if got := status(h.m.StateDir()); got != StatusStarting {
		t.Errorf("a later run of the container: %s, want starting (probed)", got)
	}
}

// otherProcess is another process's manager of the same engine, with the
// state of stateDir: its probe always fails, as one slower than
// ProbeTimeout under load would.
func otherProcess(t *testing.T, docker *fakeDocker, stateDir string, network Network) *Manager {
	t.Helper()
	m, err := New(docker, Config{Resources: testResources, StateDir: stateDir, Network: network,
		Logger: testlog.New(t),
		Probe:  func(context.Context, int, string, string) error { return errors.New("the probe timed out (the load)") }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// countingNetwork is a Network that counts its starts (each a helper
// launched, in egress) and says whether a carrier runs.
type countingNetwork struct {
	docker  *fakeDocker
	starts  atomic.Int64
	carried atomic.Bool
	mu      sync.Mutex
	loaded  map[string]time.Time
}

func (n *countingNetwork) Start(ctx context.Context, _, id string) error {
	c, err := n.docker.InspectContainer(ctx, id)
	if err != nil {
		return err
	}
	n.starts.Add(1)
	n.mu.Lock()
	n.loaded[id] = c.StartedAt
	n.mu.Unlock()
	return nil
}

func (n *countingNetwork) Loaded(id string) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	at, ok := n.loaded[id]
	return at, ok
}

func (n *countingNetwork) Stop(string)                {}
func (n *countingNetwork) ExecEnv(ExecCause) []string { return nil }
func (n *countingNetwork) Blocked(string) string      { return "" }
func (n *countingNetwork) Carried(context.Context, string) (bool, error) {
	return n.carried.Load(), nil
}

// A command of another process of the user (the CLI's exec beside the
// app's sidecar) on a run whose rules a process loaded, and whose proxy
// one carries, launches no helper to load them again (commandNetwork):
// about 205 ms of each CLI exec. Without a carrier, with another state
// directory, or on a later run, the rules go in as before.
func TestACommandTrustsTheRulesAnotherProcessLoaded(t *testing.T) {
	network := &countingNetwork{loaded: map[string]time.Time{}}
	h := newHarness(t, func(c *Config) { c.Network = network })
	network.docker = h.docker
	dir := project(t)
	started, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := network.starts.Load(); n != 1 {
		t.Fatalf("the start loaded the rules %d times", n)
	}
	exec := func(stateDir string) int64 {
		t.Helper()
		m := otherProcess(t, h.docker, stateDir, network)
		before := network.starts.Load()
		if out, err := m.Exec(context.Background(), dir, ExecRequest{Argv: []string{"true"}}); err != nil || out.ExitCode != 0 {
			t.Fatalf("exec = %+v, %v", out, err)
		}
		return network.starts.Load() - before
	}
	network.carried.Store(true)
	if n := exec(h.m.StateDir()); n != 0 {
		t.Errorf("rules loaded by the sidecar, proxy carried: the command loaded them %d times", n)
	}
	if n := exec(t.TempDir()); n != 1 {
		t.Errorf("with another user's state: loaded %d times, want 1", n)
	}
	network.carried.Store(false)
	if n := exec(h.m.StateDir()); n != 1 {
		t.Errorf("no process carries the proxy: loaded %d times, want 1 (this one carries it)", n)
	}
	network.carried.Store(true)
	if err := h.docker.StopContainer(context.Background(), started.ContainerID, 0); err != nil {
		t.Fatal(err)
	}
	if err := h.docker.StartContainer(context.Background(), started.ContainerID); err != nil {
		t.Fatal(err)
	}
	if n := exec(t.TempDir()); n != 1 {
		t.Fatalf("a later run, another state: loaded %d times, want 1", n)
	}
	stateDir := t.TempDir()
	if n := exec(stateDir); n != 1 {
		t.Errorf("a later run's first command: loaded %d times, want 1 (the mark is of the earlier run)", n)
	}
	if n := exec(stateDir); n != 0 {
		t.Errorf("the same run's second command: loaded %d times, want 0", n)
	}
}

// A process that finds a run another process proved (its desktop
// answered, its rules loaded) takes it for running without a probe. If no
// process carries the proxy, it puts the network under its own
// enforcement first, as after a probe; if one does, a command's process
// (no Run: the CLI's status) starts no helper at all, and a sidecar's Run
// takes its own hold in the background (to take the proxy over should the
// carrier end).
func TestARunProvedElsewhereIsRunning(t *testing.T) {
	network := &countingNetwork{loaded: map[string]time.Time{}}
	h := newHarness(t, func(c *Config) { c.Network = network })
	network.docker = h.docker
	dir := project(t)
	if _, err := h.m.Start(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	other := func() *Manager { return otherProcess(t, h.docker, h.m.StateDir(), network) }
	status := func(m *Manager) int64 {
		t.Helper()
		before := network.starts.Load()
		st, err := m.Status(context.Background(), dir)
		if err != nil || st == nil || st.Status != StatusRunning {
			t.Fatalf("status = %+v, %v", st, err)
		}
		return network.starts.Load() - before
	}
	if n := status(other()); n != 1 {
		t.Errorf("no carrier: the network was put under this process's enforcement %d times, want 1", n)
	}
	network.carried.Store(true)
	if n := status(other()); n != 0 {
		t.Errorf("carried, no Run: %d helpers started, want 0", n)
	}
	sidecar := other()
	before := network.starts.Load()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { sidecar.Run(ctx); close(ran) }()
	t.Cleanup(func() { cancel(); <-ran })
	<-sidecar.Reconciled()
	status(sidecar)
	for deadline := time.Now().Add(10 * time.Second); network.starts.Load() == before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a sidecar's Run took no hold of the network of a run proved elsewhere")
		}
	}
}

// dyingNetwork is a Network whose rules cannot go in for the first start
// of a process, as when the container is killed meanwhile (the helper
// cannot join a network namespace that is gone: "lstat /proc/N/ns/net"),
// killing it first when kill is set.
type dyingNetwork struct {
	countingNetwork
	kill bool
}

func (n *dyingNetwork) Start(ctx context.Context, _, id string) error {
	if n.kill {
		if err := n.docker.StopContainer(ctx, id, 0); err != nil {
			return err
		}
	}
	return errors.New("start helper: namespace path: lstat /proc/9340/ns/net: no such file or directory")
}

// A process that finds a running sandbox and cannot put its rules in
// because the container died meanwhile reports the death, not the rules
// (TestADeathIsOnTheTimelineOnce failed so once in CI: the timeline kept
// "the network policy's rules could not be put in place" for a docker
// kill). With the container still running, the rules' failure is the
// error, as before.
func TestRulesFailingForADeadRunAreNotItsError(t *testing.T) {
	h := newHarness(t, func(*Config) {})
	dir := project(t)
	if _, err := h.m.Start(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	for _, kill := range []bool{false, true} {
		network := &dyingNetwork{countingNetwork: countingNetwork{docker: h.docker, loaded: map[string]time.Time{}}, kill: kill}
		// The user's state: the desktop answered for h.m, so only the rules are left.
		st, err := otherProcess(t, h.docker, h.m.StateDir(), network).Status(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		failedRules := strings.Contains(st.Error, "rules could not be put in place")
		if kill && failedRules {
			t.Errorf("a run killed while its rules went in: %s %q, want no rules' error", st.Status, st.Error)
		}
		if !kill && (st.Status != StatusError || !failedRules) {
			t.Errorf("a running run whose rules failed: %s %q, want the rules' error", st.Status, st.Error)
		}
	}
}
