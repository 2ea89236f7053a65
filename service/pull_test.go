package service

import (
	"context"
	"strings"
	"testing"
)

// An image PILOT_IMAGE names in a registry is pulled, and kept only if it
// carries this sidecar's build hash; otherwise, or when the pull fails, it
// is built as before. Tags without a registry are never pulled.
func TestImageIsPulledFromARegistryWhenItCarriesTheBuildHash(t *testing.T) {
	const published = "registry.example:5000/team/pilot-sandbox:1.4"
	for _, tc := range []struct {
		name     string
		image    string
		registry string // the hash the registry's image carries; "" for none there
		pulls    int
		builds   int
		note     string // in the build's progress
	}{
		{"published with this hash", published, "current", 1, 0, ""},
		{"published from other files", published, "other", 1, 1, "of other files"},
		{"not in the registry", published, "", 1, 1, "the pull failed: manifest"},
		{"a local tag", "pilot-sandbox:mine", "current", 0, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Image = tc.image; c.DefaultVariant = VariantDesktop })
			events, stop := h.m.Subscribe()
			defer stop()
			h.docker.registry = map[string]map[string]string{}
			if tc.registry != "" {
				hash := tc.registry
				if hash == "current" {
					hash = h.m.ImageHash()
				}
				h.docker.registry[tc.image] = map[string]string{LabelImageHash: hash}
			}
			if err := h.m.EnsureImage(context.Background(), "p"); err != nil {
				t.Fatal(err)
			}
			if n := h.docker.count("PullImage"); n != tc.pulls {
				t.Errorf("%d pulls, want %d", n, tc.pulls)
			}
			if n := h.docker.count("BuildImage"); n != tc.builds {
				t.Errorf("%d builds, want %d", n, tc.builds)
			}
			if got := h.docker.images[tc.image][LabelImageHash]; got != h.m.ImageHash() {
				t.Errorf("the image's hash label = %q, want %q", got, h.m.ImageHash())
			}
			var msgs []string
			var sawBytes bool
			for len(events) > 0 {
				e := <-events
				if e.Kind == EventProgress {
					msgs = append(msgs, e.Progress.Message)
					sawBytes = sawBytes || (e.Progress.Total == 20 && strings.Contains(e.Progress.Message, "Pulling"))
				}
			}
			all := strings.Join(msgs, "\n")
			if tc.pulls > 0 && tc.registry != "" && !sawBytes {
				t.Errorf("no progress with the pull's bytes in:\n%s", all)
			}
			if tc.note != "" && !strings.Contains(all, tc.note) {
				t.Errorf("progress does not say %q:\n%s", tc.note, all)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	for ref, want := range map[string]bool{
		"pilot-sandbox:latest":                   false,
		"pilot-sandbox":                          false,
		"pilot-sandbox-browser:mine":             false,
		"team/pilot-sandbox:1.4":                 true,
		"ghcr.io/team/pilot-sandbox:1.4":         true,
		"localhost:5000/pilot-sandbox":           true,
		"localhost:5000/pilot-sandbox:1":         true,
		"registry.example:5000/team/p-browser:1": true,
	} {
		if got := Registry(ref); got != want {
			t.Errorf("Registry(%q) = %v, want %v", ref, got, want)
		}
	}
}
