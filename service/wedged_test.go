package service

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A container whose inspect hangs (wedged by a pause, docs/sandbox.md,
// Pause) stalls a resync for InspectTimeout only: its sandbox is shown
// failing, with why, and the others are followed as before.
func TestResyncGoesOnPastAWedgedContainer(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InspectTimeout = 100 * time.Millisecond })
	ctx := context.Background()
	wedged, other := project(t), project(t)
	st, err := h.m.Start(ctx, wedged)
	if err != nil {
		t.Fatal(err)
	}
	o, err := h.m.Start(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	h.docker.mu.Lock()
	h.docker.inspectHangs = map[string]bool{st.ContainerID: true, st.ContainerName: true}
	h.docker.lookup(o.ContainerID).Running = false
	h.docker.mu.Unlock()

	began := time.Now()
	list, err := h.m.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the resync took %v past one wedged container", took)
	}
	got := map[string]State{}
	for _, s := range list {
		got[s.ProjectPath] = s
	}
	if s := got[wedged]; s.Status != StatusError || !strings.Contains(s.Error, "did not answer") {
		t.Errorf("the wedged sandbox: %+v; want an error saying Docker did not answer", s)
	}
	if s := got[other]; s.Status != StatusStopped {
		t.Errorf("the other sandbox, stopped meanwhile: %+v; want it followed to stopped", s)
	}

	// Once Docker answers again, the next resync shows it as it is.
	h.docker.mu.Lock()
	h.docker.inspectHangs = nil
	h.docker.mu.Unlock()
	if list, err = h.m.List(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.ProjectPath == wedged && (s.Status != StatusRunning || s.Error != "") {
			t.Errorf("after the engine answers: %+v; want running", s)
		}
	}
}
