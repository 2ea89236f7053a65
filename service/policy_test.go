package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// clock is a time the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// policyHarness is a harness whose manager applies the policy in config
// (the user's config.json), on a clock the test moves, with desktops that
// have as many viewers as the test says. Rounds run when the test calls
// round, not on their own.
type policyHarness struct {
	*harness
	clock   *clock
	file    string
	writes  int
	viewers atomic.Int32
}

func newPolicyHarness(t *testing.T, config string, change func(*Config)) *policyHarness {
	t.Helper()
	p := &policyHarness{clock: &clock{t: time.Unix(1_800_000_000, 0)}}
	p.file = filepath.Join(t.TempDir(), "pilot-sandbox", "config.json")
	p.writeConfig(t, config)
	p.harness = newHarness(t, func(cfg *Config) {
		cfg.Now = p.clock.now
		cfg.Policy = PolicyConfig{File: p.file, MinIdleStop: time.Second}
		if change != nil {
			change(cfg)
		}
	})
	p.docker.exec = func(cmd []string) (ExecResult, error) {
		if len(cmd) > 0 && cmd[0] == desktop.ViewerCommand[0] {
			return ExecResult{Stdout: []byte(procNetTCP(int(p.viewers.Load())))}, nil
		}
		return ExecResult{}, nil
	}
	return p
}

func (p *policyHarness) writeConfig(t *testing.T, config string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p.file), 0o700)
	if err := os.WriteFile(p.file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	// A new modification time, whatever the file system's resolution.
	p.writes++
	at := time.Now().Add(time.Duration(p.writes) * time.Second)
	os.Chtimes(p.file, at, at)
}

// procNetTCP is a sandbox's /proc/net/tcp with n viewers: each a
// connection to noVNC and websockify's to the VNC server, beside an idle
// connection to noVNC that is no viewer.
func procNetTCP(n int) string {
	out := "  sl  local_address rem_address   st\n   0: 00000000:17C0 00000000:0000 0A 0 0 0 1000 0 1 1\n" +
		"   1: 0200A8C0:17C0 0100A8C0:D2F0 01 0 0 0 1000 0 2 1\n"
	for range n {
		out += "   2: 0200A8C0:17C0 0100A8C0:D2F4 01 0 0 0 1000 0 2 1\n" +
			"   3: 0100007F:170C 0100007F:9C40 01 0 0 0 1000 0 2 1\n"
	}
	return out
}

func (p *policyHarness) round() { p.m.policyRound(context.Background()) }

func (p *policyHarness) start(t *testing.T, dir string) State {
	t.Helper()
	st, err := p.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (p *policyHarness) status(t *testing.T, dir string) *State {
	t.Helper()
	st, err := p.m.Status(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestIdleSandboxIsStoppedAndSaysWhy(t *testing.T) {
	p := newPolicyHarness(t, `{"idleStop": "2s"}`, nil)
	dir := project(t)
	p.start(t, dir)
	p.drain()
	p.clock.advance(1500 * time.Millisecond)
	p.m.Touch(dir) // a tool call
	p.clock.advance(1500 * time.Millisecond)
	p.round()
	if st := p.status(t, dir); st.Status != StatusRunning || p.docker.count("Exec") != 0 {
		t.Fatalf("used 1.5 s ago: %s, %d execs; want running, and no look for viewers", st.Status, p.docker.count("Exec"))
	}
	p.clock.advance(600 * time.Millisecond)
	p.round()
	st := p.status(t, dir)
	const why = "stopped after 2s without activity"
	if st.Status != StatusStopped || st.StopReason != why {
		t.Fatalf("idle 2.1 s: %s (%q); want stopped, saying %q", st.Status, st.StopReason, why)
	}
	var said bool
	for _, ev := range p.drain() {
		said = said || ev.Kind == EventState && ev.State != nil && ev.State.Status == StatusStopped && ev.State.StopReason == why
	}
	if !said {
		t.Error("no event said why it stopped")
	}
	if rec, _ := projectfs.ReadRecord(dir); rec == nil || rec.StopReason != why {
		t.Errorf("sandbox.json = %+v, want the reason", rec)
	}
	// Another process (the command line) reads the reason from the file.
	other, err := New(p.docker, Config{Resources: testResources, StateDir: t.TempDir(), Probe: p.m.cfg.Probe})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := other.Status(context.Background(), dir); err != nil || st.StopReason != why {
		t.Errorf("another process sees %+v, %v; want the reason", st, err)
	}
	// Started again, it is in use and has no reason any more.
	if st := p.start(t, dir); st.StopReason != "" {
		t.Errorf("started again, still says %q", st.StopReason)
	}
	if _, err := p.m.Stop(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if st := p.status(t, dir); st.StopReason != "" {
		t.Errorf("stopped by the user, says %q", st.StopReason)
	}
}

func TestAConnectedViewerKeepsTheSandboxRunning(t *testing.T) {
	p := newPolicyHarness(t, `{"idleStop": "2s"}`, nil)
	dir := project(t)
	p.start(t, dir)
	p.viewers.Store(1)
	p.clock.advance(3 * time.Second)
	p.round()
	if st := p.status(t, dir); st.Status != StatusRunning || p.docker.count("Exec") != 1 {
		t.Fatalf("with a viewer: %s after %d looks; want running after 1", st.Status, p.docker.count("Exec"))
	}
	// While it is connected, it looks again every tenth of idleStop.
	p.clock.advance(100 * time.Millisecond)
	p.round()
	if n := p.docker.count("Exec"); n != 1 {
		t.Fatalf("looked %d times within a tenth of idleStop, want once", n)
	}
	p.clock.advance(time.Second)
	p.round()
	p.viewers.Store(0)
	p.clock.advance(time.Second)
	p.round() // the viewer has gone; it was last seen a second ago
	if st := p.status(t, dir); st.Status != StatusRunning || p.docker.count("Exec") != 3 {
		t.Fatalf("viewer gone 1 s ago: %s after %d looks; want running after 3", st.Status, p.docker.count("Exec"))
	}
	p.clock.advance(1500 * time.Millisecond)
	p.round()
	if st := p.status(t, dir); st.Status != StatusStopped {
		t.Fatalf("viewer gone 2.5 s ago: %s, want stopped", st.Status)
	}
}

func TestAnotherProcessUseCounts(t *testing.T) {
	p := newPolicyHarness(t, `{"idleStop": "2s"}`, nil)
	dir := project(t)
	p.start(t, dir)
	// A second sidecar of the user, the one the agent talks to.
	other, err := New(p.docker, Config{Resources: testResources, StateDir: p.m.cfg.StateDir, Probe: p.m.cfg.Probe, Now: p.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	p.clock.advance(10 * time.Second)
	if _, err := other.Exec(context.Background(), dir, ExecRequest{Command: "true"}); err != nil {
		t.Fatal(err)
	}
	p.round()
	if st := p.status(t, dir); st.Status != StatusRunning {
		t.Fatalf("used through another process: %s, want running", st.Status)
	}
}

func TestABadConfigStopsNothing(t *testing.T) {
	p := newPolicyHarness(t, `{"idleStop": "2s", "maxRunning": "four"}`, nil)
	dir := project(t)
	p.start(t, dir)
	p.clock.advance(time.Minute)
	p.round()
	p.round()
	if st := p.status(t, dir); st.Status != StatusRunning {
		t.Fatalf("with a bad config.json: %s, want running", st.Status)
	}
	var warnings []Warning
	for _, ev := range p.drain() {
		if ev.Kind == EventWarning {
			warnings = append(warnings, ev.Warning)
		}
	}
	if len(warnings) != 1 || warnings[0].File != p.file || warnings[0].ProjectPath != "" ||
		!strings.Contains(warnings[0].Message, "maxRunning must be a whole number") || !strings.Contains(warnings[0].Message, "no sandbox is stopped") {
		t.Fatalf("warnings = %+v, want one naming maxRunning, said once", warnings)
	}
	cfg, file, err := p.m.Policy()
	if file != p.file || cfg.IdleStop != 2*time.Second || cfg.MaxRunning != 4 || err == nil {
		t.Errorf("policy = %+v from %s, %v; want the good key applied, the bad one its default, and the error", cfg, file, err)
	}
	// Fixed, it applies at the next round.
	p.writeConfig(t, `{"idleStop": "2s"}`)
	p.round()
	if st := p.status(t, dir); st.Status != StatusStopped {
		t.Fatalf("config.json fixed: %s, want stopped", st.Status)
	}
}

func TestMaxRunningRefusesAndNamesTheRunningOnes(t *testing.T) {
	p := newPolicyHarness(t, `{"maxRunning": 1}`, nil)
	first, second := project(t), project(t)
	p.start(t, first)
	p.drain()
	_, err := p.m.Start(context.Background(), second)
	var tm *TooManyError
	if !errors.Is(err, ErrTooManySandboxes) || !errors.As(err, &tm) {
		t.Fatalf("second start: %v, want ErrTooManySandboxes", err)
	}
	if len(tm.Running) != 1 || tm.Running[0].ProjectPath != first || tm.Running[0].ContainerName != ContainerName(first) ||
		tm.Running[0].ContainerID == "" || tm.Max != 1 || !strings.Contains(err.Error(), first) {
		t.Errorf("error = %v (%+v), want it to name %s", err, tm.Running, first)
	}
	if st := p.status(t, second); st != nil || len(p.drain()) != 0 || p.docker.count("CreateContainer") != 1 {
		t.Errorf("the refused start changed something: %+v", st)
	}
	// The running one starts again as before; once it is stopped the
	// other may run.
	p.start(t, first)
	if _, err := p.m.Stop(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	p.start(t, second)
	if _, err := p.m.Start(context.Background(), first); !errors.Is(err, ErrTooManySandboxes) {
		t.Errorf("restart of a stopped one past the cap: %v", err)
	}
}

func TestMaxRunningCountsStartsUnderWay(t *testing.T) {
	p := newPolicyHarness(t, `{"maxRunning": 1}`, nil)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		dir := project(t)
		wg.Go(func() { _, errs[i] = p.m.Start(context.Background(), dir) })
	}
	wg.Wait()
	started := 0
	for _, err := range errs {
		switch {
		case err == nil:
			started++
		case !errors.Is(err, ErrTooManySandboxes):
			t.Errorf("start: %v", err)
		}
	}
	if started != 1 {
		t.Errorf("%d of 4 concurrent starts ran, want 1", started)
	}
}

// diskWarnings are the warnings about disk use among the events since the
// last drain.
func (p *policyHarness) diskWarnings() []Warning {
	var out []Warning
	for _, ev := range p.drain() {
		if ev.Kind == EventWarning && ev.Warning.Problem == ProblemDisk {
			out = append(out, ev.Warning)
		}
	}
	return out
}

func TestDiskIsWarnedOfThenStopped(t *testing.T) {
	p := newPolicyHarness(t, `{"disk": "100m"}`, nil)
	dir := project(t)
	st := p.start(t, dir)
	if spec := p.docker.specs[st.ContainerID]; spec.DiskBytes != 100<<20 {
		t.Errorf("created with DiskBytes %d, want the policy's 100 MiB for the engine", spec.DiskBytes)
	}
	p.drain()
	for _, tc := range []struct {
		used  int64
		warns bool
	}{{50 << 20, false}, {95 << 20, true}, {96 << 20, false}, {80 << 20, false}, {91 << 20, true}} {
		p.docker.setDisk(st.ContainerID, tc.used)
		p.round()
		w := p.diskWarnings()
		if (len(w) == 1) != tc.warns || len(w) > 1 {
			t.Fatalf("at %d MiB: warnings %+v, want one: %v", tc.used>>20, w, tc.warns)
		}
		if tc.warns && (w[0].ProjectPath != dir || w[0].File != "" || !strings.Contains(w[0].Message, "of its disk limit of 100MiB")) {
			t.Errorf("warning = %+v", w[0])
		}
		if got := p.status(t, dir); got.DiskBytes != tc.used || got.Status != StatusRunning {
			t.Fatalf("status = %s with diskBytes %d, want running with %d", got.Status, got.DiskBytes, tc.used)
		}
	}
	p.docker.setDisk(st.ContainerID, 120<<20)
	p.round()
	got := p.status(t, dir)
	if got.Status != StatusStopped || !strings.Contains(got.StopReason, "past the disk limit of 100MiB") || got.DiskBytes != 120<<20 {
		t.Fatalf("past the limit: %s (%q), diskBytes %d; want stopped saying why", got.Status, got.StopReason, got.DiskBytes)
	}
}

// A sandbox stopped past its disk limit and started again to free space
// may grow a tenth of the limit more; one that grew past the limit before
// its first measure has no such allowance.
func TestARestartPastTheDiskLimitMayGrowATenth(t *testing.T) {
	p := newPolicyHarness(t, `{"disk": "100m"}`, nil)
	dir := project(t)
	st := p.start(t, dir)
	p.round()
	p.docker.setDisk(st.ContainerID, 120<<20)
	p.round()
	if got := p.status(t, dir); got.Status != StatusStopped {
		t.Fatalf("past the limit: %s, want stopped", got.Status)
	}
	p.start(t, dir)
	p.round()
	p.docker.setDisk(st.ContainerID, 129<<20)
	p.round()
	if got := p.status(t, dir); got.Status != StatusRunning {
		t.Fatalf("restarted past the limit, grown a little: %s, want running", got.Status)
	}
	p.docker.setDisk(st.ContainerID, 131<<20)
	p.round()
	if got := p.status(t, dir); got.Status != StatusStopped {
		t.Fatalf("restarted past the limit, grown a tenth: %s, want stopped", got.Status)
	}
	fast := project(t)
	st = p.start(t, fast)
	p.docker.setDisk(st.ContainerID, 101<<20)
	p.round()
	if got := p.status(t, fast); got.Status != StatusStopped {
		t.Fatalf("past the limit at its first measure: %s, want stopped", got.Status)
	}
}

func TestASlowLayerIsMeasuredLessOften(t *testing.T) {
	p := newPolicyHarness(t, `{"disk": "100m", "idleStop": "0"}`, nil)
	st := p.start(t, project(t))
	p.docker.onDiskUsage = func() { p.clock.advance(300 * time.Millisecond) } // the engine walks a big layer
	p.round()
	p.clock.advance(29 * time.Second) // a round later
	p.round()
	if n := p.docker.count("DiskUsage"); n != 1 {
		t.Fatalf("a measure that took 0.3s was made again 30s later: %d measures", n)
	}
	p.clock.advance(1 * time.Second) // 100 times what it took
	p.round()
	if n := p.docker.count("DiskUsage"); n != 2 {
		t.Fatalf("%d measures after 100 times what one took, want 2", n)
	}
	// A measure of 10 s would be 1000 s apart: a minute at most.
	p.docker.onDiskUsage = func() { p.clock.advance(10 * time.Second) }
	p.clock.advance(30 * time.Second)
	p.round()
	p.clock.advance(50 * time.Second)
	p.round()
	p.clock.advance(time.Second)
	p.round()
	if n := p.docker.count("DiskUsage"); n != 4 {
		t.Fatalf("measures of 10s: %d in all, want one a minute (4)", n)
	}
	// Near its limit, however slow: every round.
	p.docker.setDisk(st.ContainerID, 95<<20)
	p.clock.advance(time.Minute)
	p.round()
	p.clock.advance(30 * time.Second)
	p.round()
	if n := p.docker.count("DiskUsage"); n != 6 {
		t.Fatalf("slow measures near the limit: %d in all, want one each round (6)", n)
	}
	p.docker.onDiskUsage = nil // quick again: every round
	p.docker.setDisk(st.ContainerID, 0)
	p.clock.advance(100 * time.Second)
	p.round()
	p.clock.advance(time.Millisecond)
	p.round()
	if n := p.docker.count("DiskUsage"); n != 8 {
		t.Fatalf("quick measures: %d in all, want 8", n)
	}
}

// TestALayerThatCannotBeMeasuredNearItsLimitIsStopped: a measure that does
// not end within the policy's DiskTimeout is given up; the sandbox is
// stopped, saying why, if its last measure was near the limit, and left
// running otherwise.
func TestALayerThatCannotBeMeasuredNearItsLimitIsStopped(t *testing.T) {
	p := newPolicyHarness(t, `{"disk": "100m", "idleStop": "0"}`, func(c *Config) {
		c.Policy.DiskTimeout = 20 * time.Millisecond
	})
	far, near := project(t), project(t)
	farSt, nearSt := p.start(t, far), p.start(t, near)
	p.docker.setDisk(farSt.ContainerID, 50<<20)
	p.docker.setDisk(nearSt.ContainerID, 92<<20)
	p.round()
	p.docker.diskHangs = true
	p.clock.advance(time.Minute)
	p.round()
	if got := p.status(t, far); got.Status != StatusRunning {
		t.Errorf("unmeasured at half its limit: %s (%q), want running", got.Status, got.StopReason)
	}
	got := p.status(t, near)
	if got.Status != StatusStopped || !strings.Contains(got.StopReason, "could not be measured within 20ms") ||
		!strings.Contains(got.StopReason, "near its disk limit of 100MiB") {
		t.Errorf("unmeasured at 92%% of its limit: %s (%q), want stopped saying why", got.Status, got.StopReason)
	}
}

func TestNoPolicyFileEnforcesNothing(t *testing.T) {
	h := newHarness(t, nil)
	for range 6 {
		if _, err := h.m.Start(context.Background(), project(t)); err != nil {
			t.Fatal(err)
		}
	}
	h.m.policyRound(context.Background())
	if h.docker.count("DiskUsage") != 0 || h.docker.count("Exec") != 0 {
		t.Error("without a policy file the policy looked at the sandboxes")
	}
	if cfg, file, err := h.m.Policy(); cfg.IdleStop != 0 || cfg.MaxRunning != 0 || cfg.DiskBytes != 0 || file != "" || err != nil {
		t.Errorf("policy = %+v from %q, %v", cfg, file, err)
	}
}

func TestRemoveAfterTheProjectIsGone(t *testing.T) {
	h := newHarness(t, nil)
	root := project(t)
	dir := filepath.Join(root, "app")
	os.Mkdir(dir, 0o755)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	orphans, err := h.m.Orphans(context.Background())
	if err != nil || len(orphans) != 1 || orphans[0].ProjectPath != dir {
		t.Fatalf("orphans = %+v, %v; want %s", orphans, err, dir)
	}
	if _, err := h.m.Status(context.Background(), dir); !errors.Is(err, ErrInvalidProject) {
		t.Errorf("status of a gone project: %v", err)
	}
	removed, err := h.m.Remove(context.Background(), dir+"/")
	if err != nil || !removed {
		t.Fatalf("remove: %v, %v", removed, err)
	}
	if _, err := h.docker.InspectContainer(context.Background(), st.ContainerID); !errors.Is(err, ErrContainerNotFound) {
		t.Errorf("the container is still there: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("remove made the project directory again: %v", err)
	}
	if removed, err := h.m.Remove(context.Background(), dir); removed || err != nil {
		t.Errorf("remove again: %v, %v", removed, err)
	}
}

func TestRemoveContainer(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	foreign := h.docker.addContainer(project(t), true, 0, desktop.Secret{})
	foreign.Labels = map[string]string{"other": "app"}
	if _, err := h.m.RemoveContainer(context.Background(), foreign.ID); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("remove a container that is not a sandbox: %v", err)
	}
	if _, err := h.m.RemoveContainer(context.Background(), ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("remove no container: %v", err)
	}
	removed, err := h.m.RemoveContainer(context.Background(), st.ContainerID)
	if err != nil || !removed {
		t.Fatalf("remove by ID: %v, %v", removed, err)
	}
	if got, _ := h.m.Status(context.Background(), dir); got != nil || projectfs.RecordExists(dir) {
		t.Errorf("after the remove: %+v, record kept: %v", got, projectfs.RecordExists(dir))
	}
	if removed, err := h.m.RemoveContainer(context.Background(), st.ContainerID); removed || err != nil {
		t.Errorf("remove again: %v, %v", removed, err)
	}
}

func TestReconciledOnceRunHasLooked(t *testing.T) {
	h := newHarness(t, nil)
	select {
	case <-h.m.Reconciled():
		t.Fatal("reconciled before Run")
	default:
	}
	dir := project(t)
	h.docker.addContainer(dir, false, 0, desktop.Secret{})
	h.run()
	select {
	case <-h.m.Reconciled():
	case <-time.After(10 * time.Second):
		t.Fatal("Run never said it had reconciled")
	}
	if st := h.m.box(dir).snapshot(); st == nil || st.Status != StatusStopped {
		t.Errorf("reconciled, but the sandbox found is %+v", st)
	}
}
