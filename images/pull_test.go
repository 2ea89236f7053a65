package images

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
			f := newFakeEngine()
			b := newBuilder(t, f, func(c *Config) { c.Tag = tc.image })
			hash := b.Hash(VariantDesktop)
			if tc.registry != "" {
				if tc.registry != "current" {
					hash = tc.registry
				}
				f.registry[tc.image] = map[string]string{LabelHash: hash}
			}
			var msgs []string
			var sawBytes bool
			report := func(msg string, _, total int) {
				msgs = append(msgs, msg)
				sawBytes = sawBytes || (total == 20 && strings.Contains(msg, "Pulling"))
			}
			if err := b.Ensure(context.Background(), VariantDesktop, report); err != nil {
				t.Fatal(err)
			}
			if n := f.count("PullImage"); n != tc.pulls {
				t.Errorf("%d pulls, want %d", n, tc.pulls)
			}
			if n := f.count("BuildImage"); n != tc.builds {
				t.Errorf("%d builds, want %d", n, tc.builds)
			}
			if got := f.images[tc.image][LabelHash]; got != b.Hash(VariantDesktop) {
				t.Errorf("the image's hash label = %q, want %q", got, b.Hash(VariantDesktop))
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

func TestInRegistry(t *testing.T) {
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
		if got := InRegistry(ref); got != want {
			t.Errorf("InRegistry(%q) = %v, want %v", ref, got, want)
		}
	}
}
