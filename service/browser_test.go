package service

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
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
	h.docker.containers[st.ContainerID].Labels[images.LabelBrowser] = "chromium"
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

// TestRelayTargetRunsAsTheDesktopUser: the relays run as the desktop's
// user where the image has one (out of the exec user's reach), as the
// sandbox user in older images, and dial the container's address as the
// engine gives it.
func TestRelayTargetRunsAsTheDesktopUser(t *testing.T) {
	for _, c := range []struct {
		label, ip, user string
		address         netip.Addr
	}{
		{desktop.DesktopUser, "172.18.0.5", desktop.DesktopUser, netip.MustParseAddr("172.18.0.5")},
		{"", "172.18.0.5", desktop.User, netip.MustParseAddr("172.18.0.5")},
		{desktop.DesktopUser, "", desktop.DesktopUser, netip.Addr{}},
	} {
		h := newHarness(t, nil)
		dir := project(t)
		st, err := h.m.Start(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		h.docker.mu.Lock()
		cont := h.docker.containers[st.ContainerID]
		cont.IP = c.ip
		if c.label != "" {
			cont.Labels[images.LabelDesktopUser] = c.label
		} else {
			delete(cont.Labels, images.LabelDesktopUser)
		}
		h.docker.mu.Unlock()
		got, err := h.m.RelayTarget(context.Background(), dir)
		if err != nil || got.User != c.user || got.Address != c.address {
			t.Errorf("label %q, IP %q: %+v, %v; want user %s, address %v", c.label, c.ip, got, err, c.user, c.address)
		}
	}
}
