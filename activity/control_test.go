package activity

import (
	"context"
	"testing"
	"time"
)

// Two sidecars share who holds a desktop: one takes it, the other sees the
// user hold it and hears it, then the release.
func TestControlIsSharedAndHeard(t *testing.T) {
	dir := t.TempDir()
	app, mcp := NewControl(dir), NewControl(dir)
	heard := make(chan ControlState, 10)
	defer mcp.Listen(func(s ControlState) { heard <- s })()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go mcp.follow(ctx, mcp.noted())
	if mcp.UserHolds(project) {
		t.Fatal("the user holds a desktop no one took")
	}
	hear := func(want ControlState) {
		t.Helper()
		select {
		case got := <-heard:
			if got != want {
				t.Fatalf("heard %+v, want %+v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("did not hear %+v", want)
		}
	}
	if err := mcp.Ask(project, "log in to the bank"); err != nil {
		t.Fatal(err)
	}
	hear(ControlState{project, HolderAgent, "log in to the bank"})
	if err := app.Take(project); err != nil {
		t.Fatal(err)
	}
	hear(ControlState{project, HolderUser, "log in to the bank"})
	if !mcp.UserHolds(project) {
		t.Fatal("the other sidecar does not see the user hold it")
	}
	if err := app.Release(project); err != nil {
		t.Fatal(err)
	}
	hear(ControlState{project, HolderAgent, ""})
	if mcp.UserHolds(project) {
		t.Fatal("the user holds it after the release")
	}
}

// A holder that vanishes (no renewal) gives control back after its lease,
// and the other sidecar hears it.
func TestVanishedHolderGivesControlBack(t *testing.T) {
	dir := t.TempDir()
	panel, agent := NewControl(dir), NewControl(dir)
	panel.SetLease(time.Second)
	panel.Take(project)
	if !agent.UserHolds(project) {
		t.Fatal("not taken")
	}
	heard := make(chan ControlState, 10)
	defer agent.Listen(func(s ControlState) { heard <- s })()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go agent.follow(ctx, agent.noted())
	select {
	case st := <-heard:
		if st.Holder != HolderAgent {
			t.Fatalf("heard %+v", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("control did not come back")
	}
	if agent.UserHolds(project) {
		t.Fatal("the user still holds it")
	}
}
