package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
)

// The user who takes a desktop over a connection holds it until release;
// when the connection closes, control goes back to the agent; each change
// is a sandbox/control notification, and both are on the timeline.
func TestControlTakeReleaseAndClose(t *testing.T) {
	state, project := t.TempDir(), canonical(t.TempDir())
	control, rec := activity.NewControl(state), activity.NewRecorder(state)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go control.Follow(ctx)
	svc := newFakeService().services()
	svc.Control, svc.Activity = control, rec
	c, done := serveServices(t, svc)
	other := activity.NewControl(state) // another sidecar's view

	c.send(1, "sandbox/control/take", map[string]any{"projectPath": project})
	if r := c.reply(); r["result"].(map[string]any)["holder"] != "user" || !other.UserHolds(project) {
		t.Fatalf("take: %v", r)
	}
	c.send(4, "sandbox/control/get", map[string]any{"projectPath": project})
	if r := c.reply(); r["result"].(map[string]any)["holder"] != "user" {
		t.Fatalf("get while the user holds it: %v", r)
	}
	c.send(2, "sandbox/control/release", map[string]any{"projectPath": project})
	if r := c.reply(); r["result"].(map[string]any)["holder"] != "agent" || other.UserHolds(project) {
		t.Fatalf("release: %v", r)
	}
	c.send(3, "sandbox/control/take", map[string]any{"projectPath": project})
	c.reply()
	c.conn.Close()
	<-done
	if other.UserHolds(project) {
		t.Fatal("the user still holds the desktop after the connection closed")
	}
	entries, _ := rec.Log().Read(project, 0, 0)
	if len(entries) != 3 || entries[0].Source != activity.SourceUser || entries[1].Name != "sandbox/control/release" {
		t.Fatalf("timeline: %+v", entries)
	}
}

// Each change of the holder reaches the connection as sandbox/control.
func TestControlIsNotified(t *testing.T) {
	state, project := t.TempDir(), canonical(t.TempDir())
	control := activity.NewControl(state)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go control.Follow(ctx)
	svc := newFakeService().services()
	svc.Control = control
	c, _ := serveServices(t, svc)
	activity.NewControl(state).Ask(project, "solve the captcha") // another sidecar's agent asks
	c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		body, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		var msg map[string]any
		json.Unmarshal(body, &msg)
		if msg["method"] == "sandbox/control" {
			p := msg["params"].(map[string]any)
			if p["holder"] != "agent" || p["reason"] != "solve the captcha" || p["projectPath"] != project {
				t.Fatalf("notified %v", p)
			}
			return
		}
	}
}

// serveServices serves svc on an in-memory connection; done closes when
// the server is done with it.
func serveServices(t *testing.T, svc Services) (*pipeClient, chan struct{}) {
	s := NewServer(svc, Info{Name: "pilot-sandbox", Version: "test"}, zerolog.Nop())
	server, client := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(context.Background(), wire.NewStream(wire.FramingNDJSON, server, server, server), ConnOptions{})
	}()
	t.Cleanup(func() { client.Close(); <-done })
	return &pipeClient{t: t, framing: wire.FramingNDJSON, conn: client, r: bufio.NewReader(client)}, done
}
