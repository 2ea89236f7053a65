package service

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// The pause's decisions on a fake engine; pause_docker_test.go freezes
// real desktops.

func TestPauseFreezesAndAStartResumes(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	started, err := h.m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	h.drain()
	paused, err := h.m.Pause(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if paused.Status != StatusPaused || paused.MemoryBytes != fakeMemory || paused.ViewerURL != "" || paused.WSPort != 0 {
		t.Errorf("paused: %+v; want paused, holding %d bytes, with no desktop address", paused, fakeMemory)
	}
	if again, err := h.m.Pause(ctx, dir); err != nil || again.Status != StatusPaused || h.docker.count("PauseContainer") != 1 {
		t.Errorf("paused again: %s, %v, %d pauses; want the state, and no second pause", again.Status, err, h.docker.count("PauseContainer"))
	}
	if rec, _ := projectfs.ReadRecord(dir); rec == nil || rec.Status != string(StatusPaused) {
		t.Errorf("sandbox.json = %+v, want paused", rec)
	}
	_, err = h.m.Exec(ctx, dir, ExecRequest{Command: "true"})
	if !errors.Is(err, ErrPaused) || !errors.Is(err, ErrNotRunning) {
		t.Errorf("exec while paused: %v; want ErrPaused, an ErrNotRunning", err)
	}
	resumed, err := h.m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Status != StatusRunning || resumed.ContainerID != started.ContainerID || resumed.MemoryBytes != 0 ||
		h.docker.count("StartContainer") != 1 || h.docker.count("UnpauseContainer") != 1 {
		t.Errorf("resumed: %+v, %d engine starts, %d unpauses; want the same run, running again", resumed, h.docker.count("StartContainer"), h.docker.count("UnpauseContainer"))
	}
	// Straight back to running: what follows the runs keeps its relays.
	if got := statuses(h.drain()); !slices.Equal(got, []string{"paused", "running"}) {
		t.Errorf("events %v, want paused, running", got)
	}
}

func TestOnlyARunningSandboxPauses(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	if _, err := h.m.Pause(ctx, dir); !errors.Is(err, ErrNoSandbox) {
		t.Errorf("no sandbox: %v, want ErrNoSandbox", err)
	}
	h.m.Start(ctx, dir)
	h.m.Stop(ctx, dir)
	if _, err := h.m.Pause(ctx, dir); !errors.Is(err, ErrNotRunning) || h.docker.count("PauseContainer") != 0 {
		t.Errorf("stopped: %v, %d pauses; want ErrNotRunning and none", err, h.docker.count("PauseContainer"))
	}
}

func TestAContainerPausedOutsideIsPaused(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	st, _ := h.m.Start(ctx, dir)
	h.docker.PauseContainer(ctx, st.ContainerID) // docker pause
	if now, err := h.m.Status(ctx, dir); err != nil || now.Status != StatusPaused || now.Error != "" || now.MemoryBytes != fakeMemory {
		t.Fatalf("status: %+v, %v; want paused, holding memory", now, err)
	}
	h.m.Status(ctx, dir)
	if n := h.docker.count("MemoryUsage"); n != 1 {
		t.Errorf("memory measured %d times; want once, a frozen sandbox's does not change", n)
	}
	h.docker.UnpauseContainer(ctx, st.ContainerID) // docker unpause
	if now, _ := h.m.Status(ctx, dir); now.Status != StatusRunning || now.MemoryBytes != 0 {
		t.Errorf("unpaused outside: %+v; want running", now)
	}
}

func TestAStopOfAPausedSandboxThawsItFirst(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	h.m.Start(ctx, dir)
	h.m.Pause(ctx, dir)
	st, err := h.m.Stop(ctx, dir)
	if err != nil || st.Status != StatusStopped || h.docker.count("UnpauseContainer") != 1 {
		t.Errorf("stop: %+v, %v, %d unpauses; want stopped after a thaw", st, err, h.docker.count("UnpauseContainer"))
	}
}

func TestCloseDoesWhatCloseActionSays(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		config string
		want   Status
	}{
		{`{}`, StatusPaused},
		{`{"closeAction": "pause"}`, StatusPaused},
		{`{"closeAction": "stop"}`, StatusStopped},
	} {
		p := newPolicyHarness(t, tc.config, nil)
		dir := project(t)
		if st, err := p.m.CloseProject(ctx, dir); st != nil || err != nil {
			t.Errorf("%s, no sandbox: %+v, %v; want nil", tc.config, st, err)
		}
		p.start(t, dir)
		st, err := p.m.CloseProject(ctx, dir)
		if err != nil || st == nil || st.Status != tc.want {
			t.Errorf("%s: %+v, %v; want %s", tc.config, st, err, tc.want)
		}
		// Closed again, it stays as it is.
		if st, err := p.m.CloseProject(ctx, dir); err != nil || st == nil || st.Status != tc.want {
			t.Errorf("%s, closed again: %+v, %v; want %s", tc.config, st, err, tc.want)
		}
	}
}

func TestASandboxPausedLongerThanIdleStopIsStopped(t *testing.T) {
	p := newPolicyHarness(t, `{"idleStop": "2s"}`, nil)
	dir := project(t)
	ctx := context.Background()
	p.start(t, dir)
	if _, err := p.m.Pause(ctx, dir); err != nil {
		t.Fatal(err)
	}
	p.clock.advance(1500 * time.Millisecond)
	p.round()
	if st := p.status(t, dir); st.Status != StatusPaused {
		t.Fatalf("paused 1.5 s: %s, want still paused", st.Status)
	}
	p.clock.advance(600 * time.Millisecond)
	p.round()
	st := p.status(t, dir)
	const why = "stopped after 2s paused"
	if st.Status != StatusStopped || st.StopReason != why {
		t.Errorf("paused 2.1 s: %s (%q); want stopped, saying %q", st.Status, st.StopReason, why)
	}
}
