package service

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

func TestDesktopRequestsGoToOneAgent(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Agent = []byte("# agent") })
	var ops []string
	h.docker.agent = func(req map[string]any) map[string]any {
		ops = append(ops, req["op"].(string))
		if req["op"] == "key" && req["keys"] == "bogus" {
			return map[string]any{"error": "unknown key name 'bogus'"}
		}
		return map[string]any{}
	}
	dir := project(t)
	if _, err := h.m.Start(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	d, err := h.m.Desktop(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Click(ctx, 1, 2, 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := d.Type(ctx, "héllo"); err != nil {
		t.Fatal(err)
	}
	err = d.Keys(ctx, "bogus")
	if !errors.Is(err, ErrAgent) || !strings.Contains(err.Error(), "unknown key name 'bogus'") {
		t.Errorf("a refused request: %v", err)
	}
	if got := strings.Join(ops, ","); got != "hello,click,type,key" {
		t.Errorf("ops = %s", got)
	}
	if n := h.docker.count("ExecAttach"); n != 1 {
		t.Errorf("%d agents started for one sandbox", n)
	}
}

func TestAgentThatDiesIsReplaced(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Agent = []byte("# agent") })
	var crash atomic.Bool
	h.docker.agent = func(req map[string]any) map[string]any {
		if req["op"] != "hello" && crash.CompareAndSwap(true, false) {
			return nil // the process ends
		}
		return map[string]any{}
	}
	dir := project(t)
	if _, err := h.m.Start(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	d, _ := h.m.Desktop(context.Background(), dir)
	crash.Store(true)
	if err := d.Move(context.Background(), 1, 1); !errors.Is(err, desktop.ErrGone) {
		t.Fatalf("request to a crashing agent: %v", err)
	}
	if err := d.Move(context.Background(), 1, 1); err != nil {
		t.Fatalf("the next request did not get a new agent: %v", err)
	}
	if n := h.docker.count("ExecAttach"); n != 2 {
		t.Errorf("%d agents started, want 2", n)
	}
}

func TestAgentOfAStoppedSandboxSaysNotRunning(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Agent = []byte("# agent") })
	dir := project(t)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.m.Desktop(context.Background(), dir)
	if err := d.Move(context.Background(), 1, 1); err != nil {
		t.Fatal(err)
	}
	h.docker.agent = func(map[string]any) map[string]any { return nil }
	h.docker.kill(st.ContainerID, 0)
	if err := d.Move(context.Background(), 1, 1); !errors.Is(err, ErrNotRunning) {
		t.Errorf("a request to a stopped sandbox: %v", err)
	}
	if _, err := h.m.Desktop(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("desktop of a stopped sandbox: %v", err)
	}
}

func TestAgentThatHangsTimesOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := newHarness(t, func(c *Config) { c.Agent = []byte("# agent") })
	h.docker.agent = func(req map[string]any) map[string]any {
		if req["op"] == "move" {
			<-release
		}
		return map[string]any{}
	}
	dir := project(t)
	if _, err := h.m.Start(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	d, _ := h.m.Desktop(context.Background(), dir)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := d.Move(ctx, 1, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung request: %v", err)
	}
	if err := d.Click(context.Background(), 1, 1, 1, 1); err != nil {
		t.Errorf("after a hung request: %v", err)
	}
}

// Every start of the container is a new run: the agent of the run before
// is ended and a request gets a new one, even when the container (and its
// ID) is the same, as after a docker restart by someone else.
func TestANewRunOfTheContainerGetsANewAgent(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Agent = []byte("# agent") })
	dir := project(t)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, _ := h.m.Desktop(ctx, dir)
	if err := d.Move(ctx, 1, 1); err != nil {
		t.Fatal(err)
	}
	// Restarted behind the sidecar's back: same container, a new start,
	// seen before the old exec's stream has ended (its end can lag).
	h.docker.mu.Lock()
	first := h.docker.sessions[st.ContainerID][0]
	h.docker.containers[st.ContainerID].StartedAt = h.docker.now.Add(time.Hour)
	h.docker.mu.Unlock()
	if _, err := h.m.Status(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Write([]byte("{}\n")); err == nil {
		// The old run's stream is closed once the new run is seen (closing
		// happens beside the state change, so give it a moment).
		for i := 0; i < 100 && err == nil; i++ {
			time.Sleep(10 * time.Millisecond)
			_, err = first.Write([]byte("{}\n"))
		}
		if err == nil {
			t.Error("the agent of the earlier run is still open")
		}
	}
	d, _ = h.m.Desktop(ctx, dir)
	if err := d.Move(ctx, 2, 2); err != nil {
		t.Fatal(err)
	}
	if n := h.docker.count("ExecAttach"); n != 2 {
		t.Errorf("%d agents started for two runs, want 2", n)
	}
}
