package service

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// A start runs the sandbox's guard while its desktop starts, not after it
// answers, and returns only once the guard's exec has: here the desktop
// answers only once the guard has begun, and the guard ends only when the
// test lets it.
func TestStartRunsTheGuardBesideTheDesktopAndWaitsForIt(t *testing.T) {
	guarding, release := make(chan struct{}), make(chan struct{})
	h := newHarness(t, func(c *Config) {
		c.Probe = func(ctx context.Context, _ int, _ string) error {
			select {
			case <-guarding:
				return nil
			case <-ctx.Done():
				return errors.New("the guard has not begun")
			}
		}
	})
	h.docker.attached = func(spec ExecSpec) {
		if slices.Equal(spec.Cmd, desktop.GuardCommand) {
			close(guarding)
			<-release
		}
	}
	dir := project(t)
	c, err := h.m.create(context.Background(), h.m.box(dir))
	if err != nil {
		t.Fatal(err)
	}
	h.docker.mu.Lock()
	h.docker.containers[c.ID].Labels[LabelDesktopUser] = desktop.DesktopUser // an image with the desktop user
	h.docker.mu.Unlock()

	started := make(chan error, 1)
	go func() {
		_, err := h.m.Start(context.Background(), dir)
		started <- err
	}()
	select {
	case <-guarding:
	case err := <-started:
		t.Fatalf("the start ended (%v) before the guard began", err)
	}
	select {
	case err := <-started:
		t.Fatalf("the start returned (%v) while the guard's exec was still running", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
}
