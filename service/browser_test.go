package service

import (
	"context"
	"errors"
	"testing"
)

// TestBrowserTargetIsTheRunOfABrowserSandbox: sandbox/browser's relay
// runs in the sandbox's current run, only when its image has a browser
// and it runs.
func TestBrowserTargetIsTheRunOfABrowserSandbox(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	if _, err := h.m.BrowserTarget(ctx, dir); !errors.Is(err, ErrNoSandbox) {
		t.Errorf("without a sandbox: %v, want ErrNoSandbox", err)
	}
	st, err := h.m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.BrowserTarget(ctx, dir); !errors.Is(err, ErrNoBrowser) {
		t.Errorf("the desktop image: %v, want ErrNoBrowser", err)
	}
	h.docker.mu.Lock()
	h.docker.containers[st.ContainerID].Labels[LabelBrowser] = "chromium"
	h.docker.mu.Unlock()
	got, err := h.m.BrowserTarget(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.ContainerID != st.ContainerID || got.StartedAt != st.StartedAt || got.Project != st.ProjectPath {
		t.Errorf("target %+v of the run %+v", got, st)
	}
	if relay, err := h.m.RelayTarget(ctx, dir); err != nil || relay.Run() != got.Run() {
		t.Errorf("the relays' target %+v, %v; want the same run as %+v", relay, err, got)
	}
	if _, err := h.m.Stop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.BrowserTarget(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("stopped: %v, want ErrNotRunning", err)
	}
	if _, err := h.m.RelayTarget(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("the relays' target, stopped: %v, want ErrNotRunning", err)
	}
}
