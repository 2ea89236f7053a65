package service

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"
	"time"
)

// browserHarness is a harness whose sandboxes look like the browser image's
// and whose pilot-open --devtools prints Chromium's browser path.
func browserHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, func(c *Config) { c.ResyncInterval = time.Hour })
	h.docker.execSpec = func(spec ExecSpec) (ExecResult, error) {
		if len(spec.Cmd) == 2 && spec.Cmd[0] == "pilot-open" && spec.Cmd[1] == "--devtools" {
			return ExecResult{Stdout: []byte("/devtools/browser/0b1c\n")}, nil
		}
		return ExecResult{}, nil
	}
	return h
}

// startWithBrowser starts dir's sandbox, marks its container as the browser
// image's, and returns the host address of its DevTools relay.
func (h *harness) startWithBrowser(dir string) (addr, container string) {
	h.t.Helper()
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		h.t.Fatal(err)
	}
	h.docker.mu.Lock()
	h.docker.containers[st.ContainerID].Labels[LabelBrowser] = "chromium"
	h.docker.mu.Unlock()
	ws, err := h.m.Browser(context.Background(), dir)
	if err != nil {
		h.t.Fatal(err)
	}
	u, err := url.Parse(ws)
	if err != nil {
		h.t.Fatal(err)
	}
	if c, err := net.Dial("tcp", u.Host); err != nil {
		h.t.Fatalf("the relay of a running sandbox refuses: %v", err)
	} else {
		c.Close()
	}
	return u.Host, st.ContainerID
}

func refuses(t *testing.T, addr, after string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
		t.Fatalf("after %s, the DevTools relay %s still accepts connections", after, addr)
	}
}

// TestRelayClosesWhenTheSandboxIsNoLongerRunning: a stop, a removal, a
// container that dies behind the manager's back and the sidecar's shutdown
// each close the sandbox's DevTools relay at once.
func TestRelayClosesWhenTheSandboxIsNoLongerRunning(t *testing.T) {
	ends := []struct {
		name string
		end  func(t *testing.T, h *harness, dir, container string)
	}{
		{"stop", func(t *testing.T, h *harness, dir, _ string) {
			if _, err := h.m.Stop(context.Background(), dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"remove", func(t *testing.T, h *harness, dir, _ string) {
			if _, err := h.m.Remove(context.Background(), dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"a kill from outside", func(_ *testing.T, h *harness, dir, container string) {
			h.docker.kill(container, 137)
			h.m.recheck(context.Background(), h.m.box(dir))
		}},
		{"shutdown", func(_ *testing.T, h *harness, _, _ string) { h.m.CloseRelays() }},
	}
	for _, tc := range ends {
		t.Run(tc.name, func(t *testing.T) {
			h := browserHarness(t)
			dir := project(t)
			addr, container := h.startWithBrowser(dir)
			tc.end(t, h, dir, container)
			refuses(t, addr, tc.name)
		})
	}
}

// TestRelayOfAnEndedRunIsNotMade: a run that ends between reading the state
// and making its relay gets none (one would listen until the next
// sandbox/browser).
func TestRelayOfAnEndedRunIsNotMade(t *testing.T) {
	h := browserHarness(t)
	dir := project(t)
	h.startWithBrowser(dir)
	b := h.m.box(dir)
	st := *b.snapshot()
	if _, err := h.m.Stop(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if r, err := h.m.relayFor(b, st); !errors.Is(err, ErrNotRunning) {
		if r != nil {
			r.Close()
		}
		t.Fatalf("relayFor a stopped run: %v, want ErrNotRunning", err)
	}
}

// TestRelayIsKeptForTheSameRun: sandbox/browser twice in one run hands out
// the same address; a new run gets a new one.
func TestRelayIsKeptForTheSameRun(t *testing.T) {
	h := browserHarness(t)
	dir := project(t)
	first, _ := h.startWithBrowser(dir)
	ws, err := h.m.Browser(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := url.Parse(ws); u.Host != first {
		t.Fatalf("a second sandbox/browser in the same run moved the relay from %s to %s", first, u.Host)
	}
	if _, err := h.m.Stop(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if second, _ := h.startWithBrowser(dir); second == first {
		t.Fatalf("a new run kept the relay %s (and its secret)", first)
	}
}
