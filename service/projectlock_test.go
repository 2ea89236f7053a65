package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// twoSidecars are two managers on one engine and one state directory, as
// two processes of one user would be (flock locks conflict between two
// open files even within one process).
func twoSidecars(t *testing.T, probeA func(ctx context.Context, wsPort int, _, _ string) error) (a, b *Manager, docker *fakeDocker) {
	t.Helper()
	docker = newFakeDocker()
	stateDir := t.TempDir()
	make := func(probe func(ctx context.Context, wsPort int, _, _ string) error) *Manager {
		m, err := New(docker, Config{
			Resources: testResources, StateDir: stateDir, Logger: testlog.New(t),
			Probe: probe, ReadyTimeout: 10 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	return make(probeA), make(func(context.Context, int, string, string) error { return nil }), docker
}

// While one sidecar starts a sandbox, another one's start waits for it and
// then adopts the running sandbox with its passwords, instead of putting
// its own over them; its status meanwhile answers at once and writes
// nothing.
func TestTwoSidecarsTakeTurnsOnOneProject(t *testing.T) {
	release := make(chan struct{})
	inProbe := make(chan struct{}, 1)
	a, b, docker := twoSidecars(t, func(ctx context.Context, wsPort int, _, _ string) error {
		select {
		case inProbe <- struct{}{}:
		default:
		}
		<-release
		return nil
	})
	dir := project(t)
	ctx := context.Background()
	type result struct {
		st  State
		err error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() { st, err := a.Start(ctx, dir); first <- result{st, err} }()
	<-inProbe // a holds the project and has started the container

	events, stop := b.Subscribe()
	defer stop()
	go func() { st, err := b.Start(ctx, dir); second <- result{st, err} }()
	if st, err := b.Status(ctx, dir); err != nil || st == nil {
		t.Errorf("status from the other sidecar meanwhile: %+v, %v", st, err)
	}
	if _, err := os.Stat(projectfs.SandboxFile(dir)); !os.IsNotExist(err) {
		t.Errorf("the looking sidecar wrote the state file: %v", err)
	}
	for waiting := false; !waiting; {
		select {
		case ev := <-events:
			waiting = ev.Kind == EventProgress && strings.Contains(ev.Progress.Message, "Waiting for another pilot-sandbox process")
		case r := <-second:
			close(release)
			t.Fatalf("the second start did not wait for the first: %+v, %v", r.st, r.err)
		}
	}
	close(release)
	ra, rb := <-first, <-second
	if ra.err != nil || rb.err != nil || ra.st.ContainerID != rb.st.ContainerID {
		t.Fatalf("starts: %+v %v / %+v %v", ra.st, ra.err, rb.st, rb.err)
	}
	if ra.st.ViewerURL != rb.st.ViewerURL || ra.st.WatchURL != rb.st.WatchURL {
		t.Errorf("the sidecars hand out different passwords:\n%s\n%s", ra.st.ViewerURL, rb.st.ViewerURL)
	}
	if n := docker.count("CreateContainer"); n != 1 {
		t.Errorf("%d containers created", n)
	}
	if n := docker.count("CopyTo"); n != 1 {
		t.Errorf("passwords installed %d times", n)
	}
}

func TestRegistryKeepsBothSidecarsProjects(t *testing.T) {
	a, b, _ := twoSidecars(t, func(context.Context, int, string, string) error { return nil })
	one, two := project(t), project(t)
	if _, err := a.Start(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Start(context.Background(), two); err != nil {
		t.Fatal(err)
	}
	r, err := projectfs.OpenRegistry(a.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.List(), " "); !strings.Contains(got, one) || !strings.Contains(got, two) {
		t.Errorf("registry = %s, want both projects", got)
	}
}

// A state directory where no lock file can be made (read-only, or a file
// in the way) does not stop sandboxes: the sidecar goes on, writing its
// files, with its own lock alone.
func TestNoLockFileIsNoReasonToFail(t *testing.T) {
	stateDir := t.TempDir()
	os.WriteFile(filepath.Join(stateDir, "locks"), []byte("in the way"), 0o600)
	h := newHarness(t, func(c *Config) { c.StateDir = stateDir })
	dir := project(t)
	if st, err := h.m.Start(context.Background(), dir); err != nil || st.Status != StatusRunning {
		t.Fatalf("start: %+v, %v", st, err)
	}
	if rec, err := projectfs.ReadRecord(dir); err != nil || rec == nil {
		t.Errorf("state file: %+v, %v", rec, err)
	}
}
