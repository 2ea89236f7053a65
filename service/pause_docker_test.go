package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// probeWindow is an xterm whose shell the test finds again after the
// freeze: its window and its process are what a resume must keep.
const probeWindow = `xterm -T pilot-pause-probe -e sh -c 'while :; do sleep 1; done'`

// windowAndPID names the probe's window and process, once it is mapped.
func windowAndPID(t *testing.T, m *service.Manager, dir string) string {
	t.Helper()
	dockertest.PollExec(t, m, dir, "the probe's window", "xdotool search --name pilot-pause-probe")
	out := exec(t, m, dir, `w=$(xdotool search --name pilot-pause-probe | head -n1) && echo "$w $(xdotool getwindowpid "$w")"`)
	if out.ExitCode != 0 || strings.TrimSpace(out.Stdout) == "" {
		t.Fatalf("the probe's window: %+v", out)
	}
	return strings.TrimSpace(out.Stdout)
}

func TestPauseKeepsWindowsThroughASidecarRestart(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	started, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Background(ctx, dir, service.ExecRequest{Command: probeWindow}); err != nil {
		t.Fatal(err)
	}
	before := windowAndPID(t, m, dir)
	paused, err := m.Pause(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if paused.Status != service.StatusPaused || paused.MemoryBytes <= 0 {
		t.Fatalf("paused: %+v; want paused, with the memory it holds", paused)
	}
	if _, err := m.Exec(ctx, dir, service.ExecRequest{Command: "true"}); !errors.Is(err, service.ErrPaused) {
		t.Errorf("exec while paused: %v; want ErrPaused", err)
	}
	// The engine refuses an exec in a frozen container; the sidecar hears
	// it as paused, not as some conflict.
	if _, err := docker.Exec(ctx, paused.ContainerID, service.ExecSpec{Cmd: []string{"true"}}); !errors.Is(err, service.ErrPaused) {
		t.Errorf("the engine's exec while paused: %v; want ErrPaused", err)
	}

	// Another sidecar (the app restarted) finds it paused.
	other, _ := dockertest.Manager(t, nil)
	dockertest.Run(t, other)
	<-other.Reconciled()
	found, err := other.Status(ctx, dir)
	if err != nil || found == nil || found.Status != service.StatusPaused || found.Error != "" || found.MemoryBytes <= 0 {
		t.Fatalf("found by a new sidecar: %+v, %v; want paused", found, err)
	}
	resumed, err := other.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Status != service.StatusRunning || resumed.StartedAt != started.StartedAt || resumed.ViewerURL == "" {
		t.Errorf("resumed: %+v; want the same run, running, with its desktop's addresses", resumed)
	}
	if after := windowAndPID(t, other, dir); after != before {
		t.Errorf("window and process %q after the resume, %q before: want them kept", after, before)
	}
}

func TestASandboxPausedPastIdleStopIsStoppedOnTheEngine(t *testing.T) {
	m, docker := policyManager(t, `{"idleStop": "2s"}`)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	events, unsubscribe := m.Subscribe()
	t.Cleanup(unsubscribe)
	st, err := m.Pause(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	dockertest.Run(t, m)
	stopped := nextState(t, events, dir, "stopped")
	const why = "stopped after 2s paused"
	if stopped.StopReason != why {
		t.Errorf("stop event says %q, want %q", stopped.StopReason, why)
	}
	// Thawed before its stop, the desktop ended on its SIGTERM, not killed
	// at the end of the grace period.
	if c, err := docker.InspectContainer(ctx, st.ContainerID); err != nil || c.Running || c.ExitCode == 137 {
		t.Errorf("the container: running %v, exit code %d, %v; want stopped cleanly", c.Running, c.ExitCode, err)
	}
}
