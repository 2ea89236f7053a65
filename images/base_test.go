package images

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

func TestTheBaseIsPinnedWherePulled(t *testing.T) {
	const pinned = "debian:bookworm-slim@sha256:d5d3f9c23164ea16f31852f95bd5959aad1c5e854332fe00f7b3a20fcc9f635c"
	dockerfile := "ARG BASE_IMAGE=" + pinned + "\nFROM ${BASE_IMAGE}\n"
	for _, tc := range []struct {
		name   string
		images []string          // what the engine has
		user   map[string]string // PILOT_BASE_IMAGE's build arguments
		want   string            // BASE_IMAGE passed, "" for the Dockerfile's pinned default
	}{
		{name: "nothing: the engine pulls the pinned digest"},
		{name: "the pinned image", images: []string{pinned, "debian:bookworm-slim"}},
		{name: "only the tag (imported): built on it, nothing pulled", images: []string{"debian:bookworm-slim"}, want: "debian:bookworm-slim"},
		{name: "the user's base", images: []string{"debian:bookworm-slim"}, user: map[string]string{"BASE_IMAGE": "ubuntu:24.04"}, want: "ubuntu:24.04"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine()
			for _, i := range tc.images {
				f.images[i] = map[string]string{}
			}
			b := newBuilder(t, f, func(c *Config) {
				c.Resources = fstest.MapFS{"Dockerfile": {Data: []byte(dockerfile)}}
				c.BuildArgs = tc.user
			})
			if got := pinnedBase(b.cfg.Resources); got != pinned {
				t.Fatalf("pinnedBase = %q", got)
			}
			if err := b.Ensure(context.Background(), VariantDesktop, nil); err != nil {
				t.Fatal(err)
			}
			if len(f.builds) != 1 {
				t.Fatalf("%d builds, want 1", len(f.builds))
			}
			if got := f.builds[0].BuildArgs[baseArg]; got != tc.want {
				t.Errorf("BASE_IMAGE = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTheDesktopImageIsPinned(t *testing.T) {
	if got := pinnedBase(resources.SandboxImage()); !baseArgLine.MatchString("ARG BASE_IMAGE="+got) || baseTag(got) != "debian:bookworm-slim" || len(got) != len("debian:bookworm-slim@sha256:")+64 {
		t.Errorf("the desktop Dockerfile's base is %q, want debian:bookworm-slim pinned by a sha256 digest", got)
	}
}
