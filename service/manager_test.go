package service

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/shell"
)

var testResources = fstest.MapFS{
	"Dockerfile":    {Data: []byte("FROM scratch\n")},
	"entrypoint.sh": {Data: []byte("#!/bin/sh\n")},
}

// harness is a manager on a fake engine whose desktops answer at once.
type harness struct {
	t      *testing.T
	docker *fakeDocker
	m      *Manager
	events <-chan Event
}

func newHarness(t *testing.T, change func(*Config)) *harness {
	t.Helper()
	docker := newFakeDocker()
	cfg := Config{
		Resources:    testResources,
		StateDir:     t.TempDir(),
		Logger:       testlog.New(t),
		Probe:        func(ctx context.Context, wsPort int, _, _ string) error { return nil },
		ReadyTimeout: 2 * time.Second,
	}
	if change != nil {
		change(&cfg)
	}
	m, err := New(docker, cfg)
	if err != nil {
		t.Fatal(err)
	}
	events, stop := m.Subscribe()
	t.Cleanup(stop)
	return &harness{t: t, docker: docker, m: m, events: events}
}

// run runs the manager's background work until the test ends.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { h.m.Run(ctx); close(ran) }()
	h.t.Cleanup(func() { cancel(); <-ran })
}

func project(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// drain returns the events published so far.
func (h *harness) drain() []Event {
	var out []Event
	for {
		select {
		case ev := <-h.events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// statuses lists the statuses that state events went through (repeats of
// one status, e.g. when the container ID becomes known, count once).
func statuses(events []Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Kind != EventState {
			continue
		}
		s := "none"
		if ev.State != nil {
			s = string(ev.State.Status)
		}
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

func stages(events []Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Kind == EventProgress && (len(out) == 0 || out[len(out)-1] != ev.Progress.Stage) {
			out = append(out, ev.Progress.Stage)
		}
	}
	return out
}

func TestStartCreatesContainerAndWaitsForDesktop(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != StatusRunning || st.WSPort == 0 || st.VNCPort == 0 || st.WSPort == st.VNCPort {
		t.Fatalf("state = %+v, want running with two host ports", st)
	}
	if st.ContainerName != ContainerName(dir) || st.ProjectPath != dir || st.Display != desktop.DefaultDisplay {
		t.Errorf("state = %+v", st)
	}
	secret, ok := desktop.ParsePasswdFile(h.docker.uploaded(st.ContainerID, "/etc/pilot-sandbox/vnc/passwd"))
	if !ok {
		t.Fatal("no VNC password file was installed before the start")
	}
	if !strings.Contains(st.ViewerURL, "password="+secret.Control) || !strings.Contains(st.WatchURL, "password="+secret.View) ||
		!strings.Contains(st.WatchURL, "view_only=true") {
		t.Errorf("viewer %q / watch %q do not carry the passwords", st.ViewerURL, st.WatchURL)
	}
	events := h.drain()
	if got := strings.Join(statuses(events), ","); got != "starting,running" {
		t.Errorf("state events = %s, want starting,running", got)
	}
	if got := strings.Join(stages(events), ","); got != "image,create,start,ready" {
		t.Errorf("progress stages = %s", got)
	}
	var rec projectfs.Record
	data, err := os.ReadFile(projectfs.SandboxFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.ContainerID != st.ContainerID || rec.WSPort != st.WSPort || rec.Status != string(StatusRunning) {
		t.Errorf("sandbox.json = %+v, state = %+v", rec, st)
	}
	if strings.Contains(string(data), secret.Control) || strings.Contains(string(data), secret.View) {
		t.Error("sandbox.json holds a VNC password")
	}
}

func TestStartIsIdempotent(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	first, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := h.m.Start(context.Background(), dir+"/")
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("second start changed the state:\n%+v\n%+v", first, second)
	}
	if n := h.docker.count("CreateContainer"); n != 1 {
		t.Errorf("%d containers created", n)
	}
	if n := h.docker.count("StartContainer"); n != 1 {
		t.Errorf("container started %d times", n)
	}
}

func TestConcurrentStartsMakeOneContainer(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	paths := []string{dir, dir + "/", link}
	var wg sync.WaitGroup
	states := make([]State, 10)
	errs := make([]error, 10)
	for i := range 10 {
		wg.Go(func() { states[i], errs[i] = h.m.Start(context.Background(), paths[i%len(paths)]) })
	}
	wg.Wait()
	for i := range 10 {
		if errs[i] != nil {
			t.Fatalf("start %d: %v", i, errs[i])
		}
		if states[i] != states[0] {
			t.Errorf("start %d returned %+v, start 0 %+v", i, states[i], states[0])
		}
	}
	if n := h.docker.count("CreateContainer"); n != 1 {
		t.Errorf("%d containers created, want 1", n)
	}
	if n := h.docker.count("BuildImage"); n != 1 {
		t.Errorf("%d image builds, want 1", n)
	}
}

// TestStartWaitsOutANameHeldByNoContainer: Docker keeps a container's name
// for a moment while it undoes a create whose client (a killed sidecar)
// went away; a start then tries again, and says so if the name stays held.
func TestStartWaitsOutANameHeldByNoContainer(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	canonical, err := projectfs.Canonical(dir)
	if err != nil {
		t.Fatal(err)
	}
	h.docker.heldNames[ContainerName(canonical)] = 2
	st, err := h.m.Start(context.Background(), dir)
	if err != nil || st.Status != StatusRunning {
		t.Fatalf("start: %+v, %v", st, err)
	}
	if n := h.docker.count("CreateContainer"); n != 3 {
		t.Errorf("%d creates, want 3 (two refused)", n)
	}

	other := project(t)
	canonical, err = projectfs.Canonical(other)
	if err != nil {
		t.Fatal(err)
	}
	h.docker.heldNames[ContainerName(canonical)] = 1000
	_, err = h.m.Start(context.Background(), other)
	if !errors.Is(err, ErrNameConflict) || !strings.Contains(err.Error(), "try the start again") {
		t.Errorf("a name held for good: %v", err)
	}
	if st, err := h.m.Status(context.Background(), other); st != nil || err != nil {
		t.Errorf("after the failed start: %+v, %v; want no sandbox", st, err)
	}
}

func TestImageBuiltOnlyWhenMissingOrOutOfDate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string // nil: no image
		builds int
	}{
		{"missing", nil, 1},
		{"out of date", map[string]string{images.LabelHash: "old"}, 1},
		{"current", map[string]string{images.LabelHash: "current"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if tc.labels != nil {
				if tc.labels[images.LabelHash] == "current" {
					tc.labels[images.LabelHash] = h.m.ImageHash()
				}
				h.docker.images[images.DefaultTag] = tc.labels
			}
			if err := h.m.EnsureImage(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
			if n := h.docker.count("BuildImage"); n != tc.builds {
				t.Errorf("%d builds, want %d", n, tc.builds)
			}
			if got := h.docker.images[images.DefaultTag][images.LabelHash]; got != h.m.ImageHash() {
				t.Errorf("image hash label = %q, want %q", got, h.m.ImageHash())
			}
		})
	}
}

// The policy's rebuildAfter reaches the images: a current image older
// than it is rebuilt without the cache, one younger is kept.
func TestThePolicysRebuildAfterRebuildsAnOldImage(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		age    time.Duration
		builds int
	}{
		{"younger", 6 * 24 * time.Hour, 0},
		{"older", 9 * 24 * time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(config, []byte(`{"rebuildAfter": "168h"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, func(c *Config) { c.Policy.File = config; c.Now = func() time.Time { return now } })
			h.docker.images[images.DefaultTag] = map[string]string{
				images.LabelHash: h.m.ImageHash(), images.LabelBuilt: now.Add(-tc.age).Format(time.RFC3339),
			}
			if err := h.m.EnsureImage(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
			if n := h.docker.count("BuildImage"); n != tc.builds {
				t.Fatalf("%d builds, want %d", n, tc.builds)
			}
			if tc.builds > 0 && !h.docker.builds[0].NoCache {
				t.Errorf("the image was rebuilt for its age from the cache")
			}
		})
	}
}

// A build the engine was not there for is the engine's absence, not a
// build's failure with a log.
func TestABuildWithoutTheEngineIsNotABuildFailure(t *testing.T) {
	h := newHarness(t, nil)
	h.docker.buildErr = &UnavailableError{Endpoint: "fake://", Err: errors.New("connection refused")}
	err := h.m.EnsureImage(context.Background(), "")
	var be *LogError
	if !errors.Is(err, ErrDockerUnavailable) || errors.As(err, &be) {
		t.Fatalf("err = %v, want ErrDockerUnavailable without a build log", err)
	}
}

func TestBuildFailureCarriesTheBuildLog(t *testing.T) {
	h := newHarness(t, nil)
	h.docker.buildLines = []string{"Step 1/2 : FROM debian", "E: Unable to locate package nope"}
	h.docker.buildErr = errors.New("The command returned a non-zero code: 100")
	_, err := h.m.Start(context.Background(), project(t))
	var be *LogError
	if !errors.As(err, &be) || !errors.Is(err, ErrImageBuild) {
		t.Fatalf("err = %v, want a build LogError", err)
	}
	if !hasLine(be.Log, "Unable to locate package") {
		t.Errorf("build log %q lacks the failing line", be.Log)
	}
	if n := h.docker.count("CreateContainer"); n != 0 {
		t.Errorf("a container was created after a failed build")
	}
}

func TestRestartRereadsPorts(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	first, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := h.m.Stop(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if stopped.Status != StatusStopped || stopped.WSPort != 0 || stopped.ViewerURL != "" {
		t.Errorf("stopped state = %+v", stopped)
	}
	second, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if second.ContainerID != first.ContainerID {
		t.Error("restart made a new container")
	}
	if second.WSPort == first.WSPort {
		t.Errorf("ports not re-read after restart: %d both times", first.WSPort)
	}
	if second.ViewerURL == first.ViewerURL {
		t.Error("the VNC password did not change on restart")
	}
}

func TestStartFailsFastWhenTheDesktopDies(t *testing.T) {
	h := newHarness(t, nil)
	h.docker.logs = []string{"pilot-desktop: Xvfb did not start on :99"}
	h.docker.onStart = func(c *Container) {
		c.Running, c.State, c.ExitCode = false, "exited", 1
	}
	dir := project(t)
	_, err := h.m.Start(context.Background(), dir)
	var se *LogError
	if !errors.As(err, &se) || !errors.Is(err, ErrStartFailed) {
		t.Fatalf("err = %v, want a start LogError", err)
	}
	if !hasLine(se.Log, "Xvfb did not start") {
		t.Errorf("start error log = %q", se.Log)
	}
	st, err := h.m.Status(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st == nil || st.Status != StatusError || !strings.Contains(st.Error, "exited with code 1") {
		t.Errorf("status after a failed start = %+v", st)
	}
}

func TestStartGivesUpWhenTheDesktopNeverAnswers(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.ReadyTimeout = 200 * time.Millisecond
		c.Probe = func(ctx context.Context, wsPort int, _, _ string) error { return errors.New("connection reset") }
	})
	dir := project(t)
	_, err := h.m.Start(context.Background(), dir)
	if !errors.Is(err, ErrStartFailed) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("err = %v", err)
	}
	if n := h.docker.count("StopContainer"); n != 1 {
		t.Errorf("the half-started container was stopped %d times, want 1", n)
	}
}

func TestStopAndRemoveWithoutSandbox(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	if _, err := h.m.Stop(context.Background(), dir); !errors.Is(err, ErrNoSandbox) || !errors.Is(err, ErrNotRunning) {
		t.Errorf("stop: err = %v, want ErrNoSandbox", err)
	}
	st, err := h.m.Close(context.Background(), dir)
	if st != nil || err != nil {
		t.Errorf("close = %v, %v; want nil, nil", st, err)
	}
	removed, err := h.m.Remove(context.Background(), dir)
	if removed || err != nil {
		t.Errorf("remove = %v, %v; want false, nil", removed, err)
	}
}

func TestRemoveDeletesContainerAndStateFile(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	h.drain()
	removed, err := h.m.Remove(context.Background(), dir)
	if err != nil || !removed {
		t.Fatalf("remove = %v, %v", removed, err)
	}
	if _, err := h.docker.InspectContainer(context.Background(), st.ContainerID); !errors.Is(err, ErrContainerNotFound) {
		t.Errorf("container still there: %v", err)
	}
	if _, err := os.Stat(projectfs.SandboxFile(dir)); !os.IsNotExist(err) {
		t.Errorf("sandbox.json still there: %v", err)
	}
	if got := statuses(h.drain()); len(got) != 1 || got[0] != "none" {
		t.Errorf("events after remove = %v, want [none]", got)
	}
	if st, err := h.m.Status(context.Background(), dir); st != nil || err != nil {
		t.Errorf("status after remove = %v, %v", st, err)
	}
}

func TestDockerDownIsReportedAndRecovered(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	h.docker.setDown(errFakeDown)
	if _, err := h.m.Start(context.Background(), dir); !errors.Is(err, ErrDockerUnavailable) {
		t.Fatalf("start with Docker down: %v", err)
	}
	if ds := h.m.DockerStatus(context.Background()); ds.Available || ds.Error == "" {
		t.Errorf("docker status = %+v", ds)
	}
	h.docker.setDown(nil)
	if ds := h.m.DockerStatus(context.Background()); !ds.Available || ds.Version == "" {
		t.Errorf("docker status after recovery = %+v", ds)
	}
	if _, err := h.m.Start(context.Background(), dir); err != nil {
		t.Fatalf("start after recovery: %v", err)
	}
}

func TestReconcileAdoptsWhatItFinds(t *testing.T) {
	h := newHarness(t, nil)
	running, stopped, crashed, vanished := project(t), project(t), project(t), project(t)
	secret := desktop.Secret{Control: "ctrl1234", View: "view1234"}
	h.docker.addContainer(running, true, 0, secret)
	h.docker.addContainer(stopped, false, 0, secret)
	h.docker.addContainer(crashed, false, 1, secret)
	// A project that had a sandbox whose container was removed while no
	// sidecar ran: its state file is stale.
	if _, err := projectfs.WriteRecord(vanished, projectfs.Record{ContainerID: "gone", Status: string(StatusRunning)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.m.registry.Add(vanished)

	states, err := h.m.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]State{}
	for _, st := range states {
		got[st.ProjectPath] = st
	}
	if st := got[running]; st.Status != StatusRunning || !strings.Contains(st.ViewerURL, "password=ctrl1234") ||
		st.Display != (desktop.Display{Width: 1024, Height: 768}) {
		t.Errorf("running sandbox adopted as %+v", st)
	}
	if st := got[stopped]; st.Status != StatusStopped {
		t.Errorf("stopped sandbox adopted as %+v", st)
	}
	if st := got[crashed]; st.Status != StatusError || st.Error == "" {
		t.Errorf("crashed sandbox adopted as %+v", st)
	}
	if _, ok := got[vanished]; ok {
		t.Errorf("the vanished sandbox is listed")
	}
	if _, err := os.Stat(projectfs.SandboxFile(vanished)); !os.IsNotExist(err) {
		t.Errorf("stale sandbox.json kept: %v", err)
	}
	for _, dir := range []string{running, stopped} {
		rec, err := projectfs.ReadRecord(dir)
		if err != nil || rec == nil || rec.Status != string(got[dir].Status) {
			t.Errorf("%s: sandbox.json = %+v, %v", dir, rec, err)
		}
	}
}

func TestEventsFollowContainersChangedBehindTheManager(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ResyncInterval = time.Hour })
	h.docker.events = make(chan ContainerEvent)
	dir := project(t)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	h.run()
	h.drain()

	h.docker.kill(st.ContainerID, 137)
	h.docker.events <- ContainerEvent{ContainerID: st.ContainerID, Action: "die", Labels: projectLabels(DefaultScope, "", dir)}
	if ev := h.next(EventState); ev.State == nil || ev.State.Status != StatusError {
		t.Errorf("after a kill: %+v", ev.State)
	}
	h.docker.remove(st.ContainerID)
	h.docker.events <- ContainerEvent{ContainerID: st.ContainerID, Action: "destroy", Labels: projectLabels(DefaultScope, "", dir)}
	if ev := h.next(EventState); ev.State != nil {
		t.Errorf("after a removal: %+v, want no sandbox", ev.State)
	}
	if _, err := os.Stat(projectfs.SandboxFile(dir)); !os.IsNotExist(err) {
		t.Errorf("sandbox.json kept after the container was removed: %v", err)
	}
}

// TestAStopFromOutsideIsStopping: Docker's SIGTERM of a docker stop makes a
// running sandbox stopping at once, until it dies (then stopped); one that
// ignores it for long is running again, and a SIGKILL is no stop.
func TestAStopFromOutsideIsStopping(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_100, 0)} // the fake's containers start at 1_700_000_000 and a second a start
	h := newHarness(t, func(c *Config) {
		c.ResyncInterval = time.Hour
		c.Now = clk.now
	})
	h.docker.events = make(chan ContainerEvent)
	dir := project(t)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	h.run()
	h.drain()
	kill := func(signal string) {
		clk.advance(time.Second)
		h.dockerEvent(dir, st.ContainerID, "kill", clk.now(), "signal", signal)
	}

	kill("9") // docker kill -s KILL: no stop to wait out; its die says what happened
	// Events are handled one at a time: once the next is taken, the kill's is done.
	h.dockerEvent(dir, st.ContainerID, "update", time.Time{})
	if got := h.statusOnce(dir, StatusRunning); got != StatusRunning {
		t.Errorf("after a SIGKILL event, before the die: %s", got)
	}
	kill("15")
	if ev := h.next(EventState); ev.State == nil || ev.State.Status != StatusStopping {
		t.Errorf("after docker stop's SIGTERM: %+v", ev.State)
	}
	if got := h.statusOnce(dir, StatusStopping); got != StatusStopping {
		t.Errorf("status while it stops: %s", got)
	}
	clk.advance(time.Minute)
	if got := h.statusOnce(dir, StatusRunning); got != StatusRunning {
		t.Errorf("a minute after a SIGTERM it ignored: %s", got)
	}

	kill("15")
	h.next(EventState)
	h.docker.kill(st.ContainerID, 143)
	h.dockerEvent(dir, st.ContainerID, "die", time.Time{})
	// The SIGTERM's stopping may be said again (a refresh that ran
	// beside it) before the die's state.
	ev := h.next(EventState)
	for ev.State != nil && ev.State.Status == StatusStopping {
		ev = h.next(EventState)
	}
	if ev.State == nil || ev.State.Status != StatusStopped {
		t.Errorf("after the die: %+v", ev.State)
	}
	again, err := h.m.Start(context.Background(), dir)
	if err != nil || again.Status != StatusRunning {
		t.Errorf("a start after the stop from outside: %+v, %v", again, err)
	}
	if got := h.statusOnce(dir, StatusRunning); got != StatusRunning {
		t.Errorf("the next run, after the stop from outside: %s", got)
	}
}

// dockerEvent sends the manager Docker's event of action on container id
// of the project dir, at at, with extra labels in pairs (Docker puts a
// kill's signal among them).
func (h *harness) dockerEvent(dir, id, action string, at time.Time, extra ...string) {
	labels := projectLabels(DefaultScope, "", dir)
	for i := 0; i+1 < len(extra); i += 2 {
		labels[extra[i]] = extra[i+1]
	}
	h.docker.events <- ContainerEvent{ContainerID: id, Action: action, Labels: labels, Time: at}
}

// statusOnce is the project's status once it is want, or after 5 s: an
// event's refresh may still hold the project, and Status then answers the
// state as it was.
func (h *harness) statusOnce(dir string, want Status) Status {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := h.m.Status(context.Background(), dir)
		if err != nil || s == nil {
			h.t.Fatalf("status: %+v, %v", s, err)
		}
		if s.Status == want || time.Now().After(deadline) {
			return s.Status
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// next waits for the next event of a kind.
func (h *harness) next(kind EventKind) Event {
	h.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-h.events:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			h.t.Fatal("no event within 5s")
		}
	}
}

func TestExecValidatesAndNeedsARunningSandbox(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	if _, err := h.m.Exec(context.Background(), dir, ExecRequest{Command: "true"}); !errors.Is(err, ErrNoSandbox) {
		t.Errorf("exec without a sandbox: %v", err)
	}
	for _, tc := range []struct {
		req   ExecRequest
		field string
	}{
		{ExecRequest{Command: ""}, "command"},
		{ExecRequest{Command: "true", Timeout: -time.Second}, "timeoutMs"},
		{ExecRequest{Command: "true", Timeout: 601 * time.Second}, "timeoutMs"},
		{ExecRequest{Argv: []string{}}, "argv"},
		{ExecRequest{Argv: []string{""}}, "argv"},
		{ExecRequest{Command: "true", Argv: []string{"true"}}, "argv"},
		{ExecRequest{Argv: []string{"echo", "a\x00b"}}, "argv"},
	} {
		_, err := h.m.Exec(context.Background(), dir, tc.req)
		var ae *ArgumentError
		if !errors.As(err, &ae) || ae.Name != tc.field {
			t.Errorf("exec %+v: err = %v, want an ArgumentError for %s", tc.req, err, tc.field)
		}
	}
	var got []string
	h.docker.exec = func(cmd []string) (ExecResult, error) {
		got = cmd
		return ExecResult{ExitCode: 3, Stdout: []byte("out\xff"), Stderr: []byte("err")}, nil
	}
	if _, err := h.m.Start(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	out, err := h.m.Exec(context.Background(), dir, ExecRequest{Command: "echo $HOME; exit 3", Timeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := shell.Marked(got[4], "choom", "-n", "500", "--", "timeout", "--kill-after=2", "2", "bash", "-lc", "echo $HOME; exit 3")
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") || !strings.HasPrefix(got[4], "\x1epilot-exit-") {
		t.Errorf("argv = %q, want %q", got, want)
	}
	if out.ExitCode != 3 || out.Stdout != "out\uFFFD" || out.Stderr != "err" || out.TimedOut {
		t.Errorf("exec output = %+v", out)
	}
	if _, err := h.m.Stop(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Exec(context.Background(), dir, ExecRequest{Command: "true"}); !errors.Is(err, ErrNotRunning) || errors.Is(err, ErrNoSandbox) {
		t.Errorf("exec on a stopped sandbox: %v", err)
	}
}

// TestExecAnswersWhenTheCommandEnds: the engine is told to stop reading
// once both markers came, though the stream stays open (a background
// child holds it), and what follows the markers is dropped.
func TestExecAnswersWhenTheCommandEnds(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	h.docker.execSpec = func(spec ExecSpec) (ExecResult, error) {
		marker := spec.Cmd[4]
		spec.Stdout.Write([]byte("out" + marker + "late"))
		spec.Stderr.Write([]byte("err" + marker + "4;"))
		select {
		case <-spec.Finished:
			return ExecResult{ExitCode: -1}, nil
		case <-time.After(30 * time.Second): // a guard against hanging, not a measure
			return ExecResult{}, errors.New("the stream was read on after both markers")
		}
	}
	if _, err := h.m.Start(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	var streamed []string
	out, err := h.m.Exec(context.Background(), dir, ExecRequest{Command: "x & y", Output: func(stream, text string) {
		streamed = append(streamed, stream+":"+text)
	}})
	if err != nil || out.ExitCode != 4 || out.Stdout != "out" || out.Stderr != "err" {
		t.Errorf("exec: %+v, %v", out, err)
	}
	if strings.Join(streamed, ",") != "stdout:out,stderr:err" {
		t.Errorf("streamed %q", streamed)
	}
}

func TestInvalidProjectPaths(t *testing.T) {
	h := newHarness(t, nil)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	for _, p := range []string{"", "relative/dir", "/does/not/exist", file, "/tmp/\x00x"} {
		_, err := h.m.Start(context.Background(), p)
		var pe *projectfs.PathError
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidProject) {
			t.Errorf("start %q: err = %v, want a PathError", p, err)
		}
	}
	if n := h.docker.count("InspectContainer"); n != 0 {
		t.Errorf("an invalid project reached Docker")
	}
}
