package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// On the real engine: while the user holds the desktop, a click is an
// error result saying so and nothing is clicked; after the release it
// clicks. A handOver returns when the user, in another sidecar, gives
// control back.
func TestControlRefusesThenAllows(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	state := t.TempDir()
	agent, panel := activity.NewControl(state), activity.NewControl(state)
	d := &desk{t: t, m: m, set: tools.New(m, tools.Control(agent)), project: dir}
	t.Cleanup(d.set.Close)
	d.must("sandbox_start", `{}`)
	if err := panel.Take(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sandbox_click", "sandbox_type", "sandbox_key"} {
		args := map[string]string{"sandbox_click": `{"x": 10, "y": 10}`, "sandbox_type": `{"text": "x"}`, "sandbox_key": `{"keys": "a"}`}[name]
		res := d.call(name, args)
		if !res.IsError || !strings.Contains(text(res), "The user has control") {
			t.Fatalf("%s while the user holds it: %v", name, res)
		}
	}
	if res := d.call("sandbox_screenshot", `{}`); res.IsError {
		t.Fatalf("a screenshot while the user holds it: %v", text(res))
	}
	panel.Release(dir)
	d.must("sandbox_click", `{"x": 10, "y": 10}`)

	answered := make(chan tools.Result, 1)
	go func() {
		res, _ := d.set.Call(context.Background(), dir, "sandbox_wait", json.RawMessage(`{"handOver": "log in, please", "timeoutMs": 30000}`))
		answered <- res
	}()
	for deadline := time.Now().Add(10 * time.Second); panel.State(dir).Reason != "log in, please"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the handOver's ask never reached the panel's side")
		}
	}
	panel.Take(dir)
	panel.Release(dir)
	if res := <-answered; res.IsError || !strings.Contains(text(res), "gave control back") {
		t.Fatalf("handOver: %v", text(res))
	}
	res, _ := d.set.Call(context.Background(), dir, "sandbox_wait", json.RawMessage(`{"handOver": "again", "timeoutMs": 300}`))
	if !strings.Contains(text(res), "has not taken over after 0.3 s") {
		t.Fatalf("handOver's timeout: %v", text(res))
	}
}
