package images

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"
)

// The recorder image is a layer on the desktop image, built with DESKTOP
// naming it, only when asked, and once: a second ask finds it current.
func TestTheRecorderIsBuiltOnTheDesktopImageWhenAsked(t *testing.T) {
	f := newFakeEngine()
	layer := fstest.MapFS{"Dockerfile": {Data: []byte("FROM x\n")}}
	b := newBuilder(t, f, func(c *Config) { c.RecorderResources = layer })
	if err := b.Ensure(context.Background(), VariantDesktop, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.builds) != 1 {
		t.Fatalf("the desktop's ensure built %d images; the recorder waits until asked", len(f.builds))
	}
	var steps []string
	tag, err := b.EnsureRecorder(context.Background(), func(msg string, _, _ int) { steps = append(steps, msg) })
	if err != nil || tag != "pilot-sandbox-recorder:test" {
		t.Fatalf("EnsureRecorder: %q, %v", tag, err)
	}
	var tags []string
	for _, spec := range f.builds {
		tags = append(tags, spec.Tag)
	}
	if !slices.Equal(tags, []string{"pilot-sandbox:test", "pilot-sandbox-recorder:test"}) || f.builds[1].BuildArgs["DESKTOP"] != "pilot-sandbox:test" {
		t.Errorf("built %v, the recorder on %q", tags, f.builds[1].BuildArgs["DESKTOP"])
	}
	if len(steps) == 0 {
		t.Error("the recorder's build reported nothing")
	}
	if _, err := b.EnsureRecorder(context.Background(), nil); err != nil || len(f.builds) != 2 {
		t.Errorf("a second ask: %v, %d builds", err, len(f.builds))
	}
	without := newBuilder(t, newFakeEngine(), nil)
	if _, err := without.EnsureRecorder(context.Background(), nil); err == nil {
		t.Error("a sidecar without the recorder's files built one")
	}
}
