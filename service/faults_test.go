package service_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

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
		if err := service.ProbeDesktop(ctx, "127.0.0.1", again.WSPort); err != nil {
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
