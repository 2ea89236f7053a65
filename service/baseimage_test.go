package service

import (
	"context"
	"io"
	"testing"
	"testing/fstest"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

// baseFake is an engine with some images and a build that records its
// arguments; anything else a test of the base image calls panics.
type baseFake struct {
	Docker
	images map[string]bool
	args   map[string]string
}

func (f *baseFake) ImageLabels(_ context.Context, ref string) (map[string]string, error) {
	if f.images[ref] {
		return map[string]string{}, nil
	}
	return nil, ErrImageNotFound
}

func (f *baseFake) BuildImage(_ context.Context, spec BuildSpec) error {
	io.Copy(io.Discard, spec.Context)
	f.args = spec.BuildArgs
	return nil
}

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
			f := &baseFake{images: map[string]bool{}}
			for _, i := range tc.images {
				f.images[i] = true
			}
			m, err := New(f, Config{
				Image: "pilot-sandbox:basetest", Resources: fstest.MapFS{"Dockerfile": {Data: []byte(dockerfile)}},
				DefaultVariant: VariantDesktop, BuildArgs: tc.user, StateDir: t.TempDir(),
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := PinnedBase(m.cfg.Resources); got != pinned {
				t.Fatalf("PinnedBase = %q", got)
			}
			if err := m.EnsureImage(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
			if got := f.args[baseArg]; got != tc.want {
				t.Errorf("BASE_IMAGE = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTheDesktopImageIsPinned(t *testing.T) {
	if got := PinnedBase(resources.SandboxImage()); !baseArgLine.MatchString("ARG BASE_IMAGE="+got) || baseTag(got) != "debian:bookworm-slim" || len(got) != len("debian:bookworm-slim@sha256:")+64 {
		t.Errorf("the desktop Dockerfile's base is %q, want debian:bookworm-slim pinned by a sha256 digest", got)
	}
}
