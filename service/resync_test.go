package service

import (
	"context"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// listThenChange is an engine whose containers change right after a list
// is read, as when another process restarts a sandbox while a resync of
// many sandboxes probes the ones before it.
type listThenChange struct {
	*fakeDocker
	after func() // runs once, after the first list
}

func (d *listThenChange) ListContainers(ctx context.Context, labels map[string]string) ([]Container, error) {
	out, err := d.fakeDocker.ListContainers(ctx, labels)
	if d.after != nil {
		d.after()
		d.after = nil
	}
	return out, err
}

// TestAResyncDoesNotWriteAStaleListOverARestart: another process's stop
// ended in a kill (exit 137, a slow desktop at the end of the grace), the
// resync listed that, and the other process restarted the sandbox before
// the resync got to it. The resync must leave the running state, in memory
// and in .pilot/sandbox.json, not the error its list said.
func TestAResyncDoesNotWriteAStaleListOverARestart(t *testing.T) {
	fake := newFakeDocker()
	dir := project(t)
	c := fake.addContainer(dir, false, 137, desktop.Secret{Control: "ctrl1234", View: "view1234"})
	docker := &listThenChange{fakeDocker: fake}
	docker.after = func() {
		// The other process's restart, and the state file it writes.
		if err := fake.StartContainer(context.Background(), c.ID); err != nil {
			t.Fatal(err)
		}
		now, _ := fake.InspectContainer(context.Background(), c.ID)
		rec := projectfs.Record{ContainerID: now.ID, ContainerName: now.Name, Status: string(StatusRunning),
			WSPort: now.Ports[desktop.NoVNCPort], VNCPort: now.Ports[desktop.VNCPort]}
		if _, err := projectfs.WriteRecord(dir, rec, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(docker, Config{
		Resources: testResources, StateDir: t.TempDir(), Logger: testlog.New(t),
		Probe: func(ctx context.Context, wsPort int, _, _ string) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}

	states, err := m.List(context.Background())
	if err != nil || len(states) != 1 {
		t.Fatalf("after the restart: %+v, %v; want one sandbox", states, err)
	}
	if states[0].Status != StatusRunning {
		t.Errorf("after the restart: %+v; want it running", states[0])
	}
	restarted, _ := fake.InspectContainer(context.Background(), c.ID)
	rec, err := projectfs.ReadRecord(dir)
	if err != nil || rec == nil || rec.Status != string(StatusRunning) || rec.WSPort != restarted.Ports[desktop.NoVNCPort] {
		t.Errorf("sandbox.json = %+v, %v; want running on port %d", rec, err, restarted.Ports[desktop.NoVNCPort])
	}
}
