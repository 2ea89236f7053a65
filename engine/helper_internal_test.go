package engine

import (
	"slices"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestHelperContainer: a helper joins the sandbox's network namespace and
// nothing else, holds only the capabilities asked, cannot gain any, writes
// nothing to its image, keeps no log, is bounded, and is removed when it
// exits; its stdin closes when its one client lets go.
func TestHelperContainer(t *testing.T) {
	spec := service.HelperSpec{Image: "pilot-sandbox:latest", User: "0:0", Cmd: []string{"python3", "proxy.py"},
		NetworkOf: "abc", CapAdd: []string{"NET_ADMIN"}, Labels: map[string]string{"pilot.egress": "test"},
		Limits: service.Limits{MemoryBytes: 64 << 20, PidsLimit: 100, NanoCPUs: 1e9}}
	h := helperHost(spec)
	if h.NetworkMode != "container:abc" || !h.AutoRemove || !h.ReadonlyRootfs || h.LogConfig.Type != "none" {
		t.Errorf("host config: %+v", h)
	}
	if !slices.Equal(h.CapDrop, []string{"ALL"}) || !slices.Equal(h.CapAdd, []string{"NET_ADMIN"}) ||
		!slices.Contains(h.SecurityOpt, "no-new-privileges") || len(h.Binds) != 0 || len(h.Mounts) != 0 {
		t.Errorf("privileges: drop %v add %v security %v binds %v", h.CapDrop, h.CapAdd, h.SecurityOpt, h.Binds)
	}
	if h.Memory != 64<<20 || h.MemorySwap != 64<<20 || *h.PidsLimit != 100 || h.NanoCPUs != 1e9 {
		t.Errorf("limits: %+v", h)
	}
	c := helperConfig(spec)
	if !c.OpenStdin || !c.StdinOnce || !c.AttachStdin || !slices.Equal(c.Entrypoint, spec.Cmd) || c.User != "0:0" || c.Labels["pilot.egress"] != "test" {
		t.Errorf("config: %+v", c)
	}
}
