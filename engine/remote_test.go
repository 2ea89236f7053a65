package engine_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestRemoteEngine reaches the engine as a remote one is reached, through a
// TCP proxy: in the clear, by an address with no scheme (which
// go-dockerclient takes as tcp://), and with TLS and client certificates
// from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH. It makes the calls that do
// not go through a call of the library's own (the event stream and the
// limits update), and those that go through the library's context-less
// calls (capacity, network list) and create the sandboxes' network.
func TestRemoteEngine(t *testing.T) {
	direct, image := withImage(t) // before DOCKER_HOST points elsewhere
	for _, tc := range []struct {
		name    string
		connect func(t *testing.T) *engine.Client
	}{
		{"tcp", func(t *testing.T) *engine.Client {
			return dockertest.NewTCPProxy(t, false).Engine()
		}},
		{"tcp, no scheme", func(t *testing.T) *engine.Client {
			p := dockertest.NewTCPProxy(t, false)
			t.Setenv("DOCKER_HOST", strings.TrimPrefix(p.Host(), "tcp://"))
			return engine.New("")
		}},
		{"tls", func(t *testing.T) *engine.Client {
			return dockertest.NewTCPProxy(t, true).Engine()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remote := tc.connect(t)
			if !strings.HasPrefix(remote.Endpoint(), "tcp://") && !strings.HasPrefix(remote.Endpoint(), "127.0.0.1:") {
				t.Fatalf("the client is not remote: %s", remote.Endpoint())
			}
			exerciseEngine(t, remote, direct, image)
		})
	}
}

// exerciseEngine follows the events of a container that it creates,
// updates and removes through remote, checking each step.
func exerciseEngine(t *testing.T, remote, direct *engine.Client, image string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if info, err := remote.Info(ctx); err != nil || info.APIVersion == "" {
		t.Fatalf("info: %+v, %v", info, err)
	}
	if capacity, err := remote.Capacity(ctx); err != nil || capacity.CPUs < 1 {
		t.Fatalf("capacity: %+v, %v", capacity, err)
	}
	run := randomHex(t)
	labels := map[string]string{service.LabelSandbox: dockertest.TestScope, "pilot.test.run": run}
	eventsCtx, stopEvents := context.WithCancel(ctx)
	events, err := remote.Events(eventsCtx, labels)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	id, err := remote.CreateContainer(ctx, service.ContainerSpec{
		Name: "pilot-sandbox-remote-test-" + run, Image: image, Labels: labels,
		Ports: []int{5900}, HostIP: "127.0.0.1", Limits: service.DefaultLimits,
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { direct.RemoveContainer(context.Background(), id) })
	nextEvent(t, events, id, "create")

	want := service.Limits{MemoryBytes: 3 << 30, NanoCPUs: 1e9, PidsLimit: 512, ShmBytes: service.DefaultLimits.ShmBytes}
	if err := remote.UpdateLimits(ctx, id, want); err != nil {
		t.Fatalf("update: %v", err)
	}
	if c, err := direct.InspectContainer(ctx, id); err != nil || c.Limits != want {
		t.Errorf("limits after the update: %+v, want %+v (%v)", c.Limits, want, err)
	}
	if err := remote.UpdateLimits(ctx, "pilot-no-such-container", want); !errors.Is(err, service.ErrContainerNotFound) {
		t.Errorf("update of a missing container: %v", err)
	}
	if err := remote.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, events, id, "destroy")
	stopEvents()
	for range events {
	}
}

// nextEvent waits for the next event of the stream, which must be action
// on the container id.
func nextEvent(t *testing.T, events <-chan service.ContainerEvent, id, action string) {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok || ev.ContainerID != id || ev.Action != action {
			t.Fatalf("event %+v (open: %v), want %s of %s", ev, ok, action, id)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no %s event within a minute", action)
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestEventsKeepOrderForASlowReader: the event stream is read here rather
// than through go-dockerclient's AddEventListener, which drops events when
// its listener's channel is full and delivers each from a goroutine of its
// own. A reader that takes its time still gets every event, in order.
func TestEventsKeepOrderForASlowReader(t *testing.T) {
	docker := dockertest.Engine(t)
	m, _ := dockertest.Manager(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := m.EnsureImage(ctx, ""); err != nil {
		t.Fatal(err)
	}
	run := randomHex(t)
	labels := map[string]string{service.LabelSandbox: dockertest.TestScope, "pilot.test.run": run}
	events, err := docker.Events(ctx, labels)
	if err != nil {
		t.Fatal(err)
	}
	const containers = 40 // 80 events: more than the stream's channel holds
	var want []string
	for i := range containers {
		id, err := docker.CreateContainer(ctx, service.ContainerSpec{
			Name: fmt.Sprintf("pilot-sandbox-events-test-%s-%d", run, i), Image: m.Image(), Labels: labels,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := docker.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		want = append(want, "create "+id, "destroy "+id)
	}
	for i, w := range want { // only now does the reader start
		select {
		case ev := <-events:
			if got := ev.Action + " " + ev.ContainerID; got != w {
				t.Fatalf("event %d: %s, want %s", i, got, w)
			}
		case <-ctx.Done():
			t.Fatalf("event %d (%s) never came", i, w)
		}
	}
}
