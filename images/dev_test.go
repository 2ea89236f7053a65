package images

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"
)

// The dev variant is three images, each on the one before: its build hash
// covers the browser's and the desktop's, and it is built with BROWSER
// naming the browser image.
func TestTheDevVariantIsBuiltOnTheBrowserImage(t *testing.T) {
	f := newFakeEngine()
	layer := fstest.MapFS{"Dockerfile": {Data: []byte("FROM x\n")}}
	b := newBuilder(t, f, func(c *Config) { c.BrowserResources, c.DevResources = layer, layer })
	if err := b.Ensure(context.Background(), VariantDev, nil); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, spec := range f.builds {
		tags = append(tags, spec.Tag)
	}
	if !slices.Equal(tags, []string{"pilot-sandbox:test", "pilot-sandbox-browser:test", "pilot-sandbox-dev:test"}) {
		t.Errorf("built %v", tags)
	}
	if got := f.builds[2].BuildArgs["BROWSER"]; got != "pilot-sandbox-browser:test" {
		t.Errorf("the dev image is built on %q", got)
	}
	if b.Tag(VariantDev) != "pilot-sandbox-dev:test" || b.Hash(VariantDev) == b.Hash(VariantBrowser) {
		t.Errorf("dev: tag %s, hash %s (browser %s)", b.Tag(VariantDev), b.Hash(VariantDev), b.Hash(VariantBrowser))
	}
	without := newBuilder(t, newFakeEngine(), func(c *Config) { c.BrowserResources = layer })
	if err := without.Ensure(context.Background(), VariantDev, nil); err == nil {
		t.Error("a sidecar without the dev image's files built one")
	}
}
