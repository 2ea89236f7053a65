package images

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
)

// fakeEngine is an engine's images in memory: what it has, what a pull can
// fetch, and the builds asked of it.
type fakeEngine struct {
	mu       sync.Mutex                   // guards everything below
	images   map[string]map[string]string // tag -> labels
	registry map[string]map[string]string // what a pull can fetch: reference -> labels
	builds   []BuildSpec
	calls    map[string]int
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{images: map[string]map[string]string{}, registry: map[string]map[string]string{}, calls: map[string]int{}}
}

func (f *fakeEngine) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[call]
}

func (f *fakeEngine) ImageLabels(_ context.Context, ref string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["ImageLabels"]++
	labels, ok := f.images[ref]
	if !ok {
		return nil, ErrNotFound
	}
	return maps.Clone(labels), nil
}

func (f *fakeEngine) BuildImage(_ context.Context, spec BuildSpec) error {
	io.Copy(io.Discard, spec.Context)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["BuildImage"]++
	f.builds = append(f.builds, spec)
	f.images[spec.Tag] = maps.Clone(spec.Labels)
	return nil
}

// PullImage fetches an image the fake registry holds, reporting its one
// layer's download in two steps, as the engine reports a layer's.
func (f *fakeEngine) PullImage(_ context.Context, ref string, progress func(PullProgress)) error {
	f.mu.Lock()
	f.calls["PullImage"]++
	labels, ok := f.registry[ref]
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("manifest for %s not found: manifest unknown", ref)
	}
	progress(PullProgress{Status: "Downloading", Current: 10, Total: 20})
	progress(PullProgress{Status: "Download complete", Current: 20, Total: 20})
	f.mu.Lock()
	f.images[ref] = maps.Clone(labels)
	f.mu.Unlock()
	return nil
}

func (f *fakeEngine) ImageTags(_ context.Context, label, value string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var tags []string
	for tag, labels := range f.images {
		if labels[label] == value {
			tags = append(tags, tag)
		}
	}
	slices.Sort(tags)
	return tags, nil
}

func (f *fakeEngine) RemoveImage(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["RemoveImage"]++
	if _, ok := f.images[ref]; !ok {
		return ErrNotFound
	}
	delete(f.images, ref)
	return nil
}

// testResources is a desktop image's build context.
var testResources = fstest.MapFS{"Dockerfile": {Data: []byte("FROM scratch\n")}}

// newBuilder is a Builder on f for the test, with cfg's changes applied.
func newBuilder(t *testing.T, f *fakeEngine, change func(*Config)) *Builder {
	t.Helper()
	cfg := Config{Tag: "pilot-sandbox:test", Resources: testResources, Logger: testlog.New(t)}
	if change != nil {
		change(&cfg)
	}
	b, err := New(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
