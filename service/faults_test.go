package service_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestTakenHostPortsAreTriedAgain takes, on 127.0.0.1, the host ports Docker
// would give out next: Docker skips ten taken ones itself and then refuses
// the start ("bind: address already in use"); the sidecar starts again until
// Docker finds free ones. Docker hands out ports in order from the last one
// it gave, so the next ones are known; another user of the engine starting
// a container at that moment can move them on, so the scenario is tried up
// to three times before the test gives up.
func TestTakenHostPortsAreTriedAgain(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	for try := 1; try <= 3; try++ {
		st, err := m.Start(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Stop(ctx, dir); err != nil {
			t.Fatal(err)
		}
		held := holdPorts(t, max(st.WSPort, st.VNCPort)+1, 24)
		events, unsubscribe := m.Subscribe()
		again, err := m.Start(ctx, dir)
		unsubscribe()
		for _, ln := range held {
			ln.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		retried := false
		for ev := range events {
			retried = retried || ev.Kind == service.EventProgress && strings.Contains(ev.Progress.Message, "was taken; starting again")
		}
		if !retried {
			t.Logf("try %d: Docker gave ports %d and %d without running into the held ones (someone else's container moved them on)", try, again.WSPort, again.VNCPort)
			continue
		}
		for _, ln := range held {
			if p := ln.Addr().(*net.TCPAddr).Port; p == again.WSPort || p == again.VNCPort {
				t.Errorf("the sandbox got port %d, which was held", p)
			}
		}
		if again.Status != service.StatusRunning {
			t.Errorf("after the retries: %+v", again)
		}
		if err := desktop.Probe(ctx, "127.0.0.1", again.WSPort, viewerPage); err != nil {
			t.Errorf("the desktop on its new ports: %v", err)
		}
		return
	}
	t.Error("three tries and Docker never ran into the held ports")
}

// holdPorts listens on up to n ports of 127.0.0.1 from first on, skipping
// those something else holds already.
func holdPorts(t *testing.T, first, n int) []net.Listener {
	t.Helper()
	var held []net.Listener
	for p := first; len(held) < n && p < 61000; p++ {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			held = append(held, ln)
		}
	}
	return held
}

// TestChangesOutsideTheSidecarAreAnnounced does to a running sandbox what
// a user could with the docker command: kill it, start it, restart it,
// pause and unpause it, remove it while it runs. Each change is announced
// within seconds (Docker's event stream; the periodic resync is set to an
// hour here, so it cannot be what notices), with a status that says what
// happened, and the sandbox works again after each one that leaves it
// running, on its new ports.
func TestChangesOutsideTheSidecarAreAnnounced(t *testing.T) {
	m, docker := dockertest.Manager(t, func(c *service.Config) { c.ResyncInterval = time.Hour })
	api := dockertest.NewAPI(t)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	events, unsubscribe := m.Subscribe()
	t.Cleanup(unsubscribe)
	dockertest.Run(t, m)

	id := "/containers/" + st.ContainerID
	for _, step := range []struct {
		what   string
		do     func()
		status string // "" for no sandbox
		error  string
	}{
		{"docker kill", func() { api.Post(id + "/kill") }, "error", "killed from outside"},
		{"docker start", func() { api.Post(id + "/start") }, "running", ""},
		{"docker restart", func() { api.Post(id + "/restart?t=1") }, "running", ""},
		{"docker pause", func() { api.Post(id + "/pause") }, "paused", ""},
		{"docker unpause", func() { api.Post(id + "/unpause") }, "running", ""},
		{"docker rm -f", func() { api.Delete(id + "?force=true") }, "", ""},
	} {
		started := time.Now()
		step.do()
		got := nextState(t, events, dir, step.status)
		t.Logf("%s: announced after %s", step.what, time.Since(started).Round(time.Millisecond))
		if got != nil && !strings.Contains(got.Error, step.error) {
			t.Errorf("%s: error %q, want one saying %q", step.what, got.Error, step.error)
		}
		now, err := m.Status(ctx, dir)
		if err != nil || (now == nil) != (step.status == "") || (now != nil && string(now.Status) != step.status) {
			t.Errorf("%s: status %+v, %v", step.what, now, err)
		}
		if step.status == "running" && step.error == "" {
			assertDesktopWorks(t, m, dir, *now)
		}
	}
}

// nextState waits, up to a minute, for a state event of the project with the
// status ("" for none) and returns its state.
func nextState(t *testing.T, events <-chan service.Event, dir, status string) *service.State {
	t.Helper()
	deadline := time.After(time.Minute) // a bound, not a speed: a resync of other packages' sandboxes may come first
	for {
		select {
		case ev := <-events:
			if ev.Kind != service.EventState || ev.Project != dir {
				continue
			}
			got := ""
			if ev.State != nil {
				got = string(ev.State.Status)
			}
			if got == status {
				return ev.State
			}
		case <-deadline:
			t.Fatalf("no %q event within a minute", status)
		}
	}
}
