package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// fakeDesktopPorts hands out host ports for a container's ports, failing
// the first fails calls, and records what it was asked.
type fakeDesktopPorts struct {
	mu    sync.Mutex
	fails int
	calls []string // container IDs, one per call
	next  int
}

func (f *fakeDesktopPorts) HostPorts(_ context.Context, t RelayTarget, ports []int) (map[int]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, t.ContainerID)
	if len(f.calls) <= f.fails {
		return nil, errors.New("no relay yet")
	}
	out := map[int]int{}
	for _, p := range ports {
		out[p] = 40000 + p + f.next
	}
	return out, nil
}

func (f *fakeDesktopPorts) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// noNetworkHarness is a manager whose desktop ports are carried by a
// fake, whose probe records the ports it was given, and whose user config
// is config (none if empty).
func noNetworkHarness(t *testing.T, relay *fakeDesktopPorts, config string, probed *[]int) *harness {
	file := ""
	if config != "" {
		file = filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	return newHarness(t, func(c *Config) {
		c.Policy.File = file
		if relay != nil {
			c.DesktopPorts = relay
		}
		c.Probe = func(_ context.Context, wsPort int, _, _ string) error {
			mu.Lock()
			defer mu.Unlock()
			*probed = append(*probed, wsPort)
			return nil
		}
	})
}

func TestNetworkNoneDesktopIsCarried(t *testing.T) {
	relayed := 40000 + desktop.NoVNCPort
	for _, tc := range []struct {
		name, settings, config string
		fails                  int
	}{
		{name: "project settings", settings: `{"sandbox": {"network": "none"}}`},
		{name: "user config", config: `{"network": "none"}`},
		{name: "relay not yet there", settings: `{"sandbox": {"network": "none"}}`, fails: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			relay := &fakeDesktopPorts{fails: tc.fails}
			var probed []int
			h := noNetworkHarness(t, relay, tc.config, &probed)
			dir := project(t)
			if tc.settings != "" {
				writeSettings(t, dir, tc.settings)
			}
			st, err := h.m.Start(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if spec := h.docker.specs[st.ContainerID]; !spec.NoNetwork {
				t.Errorf("the container was made with a network: %+v", spec)
			}
			if st.Network != NetworkNone || st.WSPort != relayed || st.VNCPort != 40000+desktop.VNCPort ||
				!strings.Contains(st.ViewerURL, "127.0.0.1:"+strconv.Itoa(relayed)) || !strings.Contains(st.WatchURL, "127.0.0.1:"+strconv.Itoa(relayed)) {
				t.Errorf("state %+v, want the relayed ports and network none", st)
			}
			if len(probed) == 0 || probed[len(probed)-1] != relayed {
				t.Errorf("probed %v, want the relayed port %d", probed, relayed)
			}
			if calls := relay.called(); len(calls) <= tc.fails || calls[len(calls)-1] != st.ContainerID {
				t.Errorf("relay asked for %v, want container %s", calls, st.ContainerID)
			}
		})
	}
}

func TestNetworkDefaultIsNotCarried(t *testing.T) {
	relay := &fakeDesktopPorts{}
	var probed []int
	h := noNetworkHarness(t, relay, "", &probed)
	st, err := h.m.Start(context.Background(), project(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Network != "" || h.docker.specs[st.ContainerID].NoNetwork || len(relay.called()) != 0 {
		t.Errorf("state %+v, relay calls %v: a sandbox with a network was carried", st, relay.called())
	}
}

func TestNetworkNoneIsRefusedWithoutRelay(t *testing.T) {
	for _, tc := range []struct{ name, settings, config, field string }{
		{name: "project settings", settings: `{"sandbox": {"network": "none"}}`, field: "sandbox.network"},
		{name: "user config", config: `{"network": "none"}`, field: "network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var probed []int
			h := noNetworkHarness(t, nil, tc.config, &probed)
			dir := project(t)
			if tc.settings != "" {
				writeSettings(t, dir, tc.settings)
			}
			_, err := h.m.Start(context.Background(), dir)
			var ce *projectfs.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(ce.Reason, "no relay") {
				t.Fatalf("start: %v, want a refusal of %s saying why", err, tc.field)
			}
			if len(h.docker.specs) != 0 {
				t.Errorf("a container was made")
			}
		})
	}
}

// A container's network is fixed when it is made: a sandbox made with one
// is not started once no network is asked, and one made without keeps it.
func TestNetworkChangeAppliesToANewSandbox(t *testing.T) {
	ctx := context.Background()
	var probed []int
	h := noNetworkHarness(t, &fakeDesktopPorts{}, "", &probed)
	dir := project(t)
	if _, err := h.m.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Stop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	writeSettings(t, dir, `{"sandbox": {"network": "none"}}`)
	starts := h.docker.count("StartContainer")
	_, err := h.m.Start(ctx, dir)
	var ce *projectfs.ConfigError
	if !errors.As(err, &ce) || ce.Field != "sandbox.network" || !strings.Contains(ce.Reason, "made with a network") {
		t.Fatalf("start: %v, want a refusal saying the sandbox has a network", err)
	}
	if h.docker.count("StartContainer") != starts {
		t.Error("the sandbox with a network was started")
	}

	if _, err := h.m.Remove(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Stop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	writeSettings(t, dir, `{}`)
	h.drain()
	st, err := h.m.Start(ctx, dir)
	if err != nil || st.Network != NetworkNone {
		t.Fatalf("start: %+v, %v: want it still without a network", st, err)
	}
	noted := false
	for _, ev := range h.drain() {
		noted = noted || strings.Contains(ev.Progress.Message, "made without a network")
	}
	if !noted {
		t.Error("the start did not say the sandbox stays without a network")
	}
}

// A desktop whose ports cannot be carried fails the start saying why.
func TestNetworkNoneWithoutCarriedPortsFailsTheStart(t *testing.T) {
	var probed []int
	h := noNetworkHarness(t, &fakeDesktopPorts{fails: 1 << 30}, "", &probed)
	dir := project(t)
	writeSettings(t, dir, `{"sandbox": {"network": "none"}}`)
	_, err := h.m.Start(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "carry the desktop's ports: no relay yet") {
		t.Fatalf("start: %v, want it to say the ports were not carried", err)
	}
	if len(probed) != 0 {
		t.Errorf("probed %v without a carried port", probed)
	}
}
