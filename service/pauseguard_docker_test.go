package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// guardIterations is how many pauses the guard's test makes while execs
// start: unguarded, five pauses of five wedged the container here.
const guardIterations = 20

// wedgeWait is how long one pause and resume may take before the test
// calls the container wedged: they take about a second under load.
const wedgeWait = 90 * time.Second

// A pause while the sidecar starts execs in the sandbox, from many
// goroutines, completes and resumes (engine/gate.go): it must not wedge
// the container (docs/sandbox.md, Pause).
func TestPauseWhileTheSidecarStartsExecs(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	started, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	id := started.ContainerID
	t.Cleanup(func() { thaw(t, docker, id) })

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ran, refused atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := m.Exec(ctx, dir, service.ExecRequest{Command: "true"})
				switch {
				case err == nil:
					ran.Add(1)
				case errors.Is(err, service.ErrNotRunning):
					refused.Add(1) // paused, or resuming: said so
					time.Sleep(20 * time.Millisecond)
				default:
					t.Errorf("exec: %v", err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	for i := range guardIterations {
		before := ran.Load()
		for ran.Load() == before {
			time.Sleep(time.Millisecond) // execs are starting again
		}
		pauseAndResume(t, m, dir, id, i)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d pauses; %d execs ran, %d refused while paused", guardIterations, ran.Load(), refused.Load())
}

// pauseAndResume pauses the sandbox and resumes it, failing the test (and
// thawing the container by hand, for the engine's sake) when either does
// not end in wedgeWait.
func pauseAndResume(t *testing.T, m *service.Manager, dir, id string, i int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if st, err := m.Pause(context.Background(), dir); err != nil || st.Status != service.StatusPaused {
			t.Errorf("pause %d: %+v, %v; want paused", i, st, err)
		}
		if st, err := m.Start(context.Background(), dir); err != nil || st.Status != service.StatusRunning {
			t.Errorf("resume %d: %+v, %v; want running", i, st, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(wedgeWait):
		t.Errorf("pause %d and resume did not end in %v: the container is wedged", i, wedgeWait)
		thawFreezer(t, id)
		<-done
	}
}

// thaw unpauses the container if it is paused, so that no test leaves a
// container frozen.
func thaw(t *testing.T, docker service.Docker, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c, err := docker.InspectContainer(ctx, id); err == nil && c.Paused() {
		if err := docker.UnpauseContainer(ctx, id); err != nil {
			t.Logf("cleanup: unpause: %v", err)
		}
	}
}

// thawFreezer thaws a wedged container's cgroup v1 freezer by hand, the
// only way out of the wedge (docs/sandbox.md, Pause); it needs root and
// the engine on this machine.
func thawFreezer(t *testing.T, id string) {
	state := filepath.Join("/sys/fs/cgroup/freezer/docker", id, "freezer.state")
	if err := os.WriteFile(state, []byte("THAWED"), 0); err != nil {
		t.Logf("could not thaw the wedged container by hand: %v", err)
	}
}
