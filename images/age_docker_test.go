package images_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
)

// ageTestDockerfile is a small image whose one layer differs at every
// build that really runs its step: a build from the cache keeps it.
const ageTestDockerfile = `ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN cat /proc/sys/kernel/random/uuid >/build-id
`

// TestAnOldImageIsRebuiltForSecurityUpdates builds an image with a clock
// set 9 days back (the sidecar's own label says when it was built), then
// ensures it with the real clock and rebuildAfter 168h: the build says
// why, runs its steps anew (not from the cache), and labels the image as
// new; a further ensure builds nothing.
func TestAnOldImageIsRebuiltForSecurityUpdates(t *testing.T) {
	engine := dockertest.Engine(t)
	api := dockertest.NewAPI(t)
	tag := fmt.Sprintf("pilot-sandbox-agetest:%d", time.Now().UnixNano())
	t.Cleanup(func() { api.Delete("/images/" + tag + "?force=1") })
	var mu sync.Mutex
	var messages []string
	builder := func(now func() time.Time) *images.Builder {
		b, err := images.New(engine, images.Config{
			Tag:          tag,
			Resources:    fstest.MapFS{"Dockerfile": {Data: []byte(ageTestDockerfile)}},
			BuildArgs:    dockertest.Config(t).BuildArgs,
			RebuildAfter: func() time.Duration { return 168 * time.Hour },
			Logger:       testlog.New(t).Level(zerolog.InfoLevel),
			Now:          now,
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	report := func(msg string, _, _ int) {
		mu.Lock()
		messages = append(messages, msg)
		mu.Unlock()
	}
	type image struct {
		ID     string
		Config struct{ Labels map[string]string }
		RootFS struct{ Layers []string }
	}
	inspect := func() (img image) {
		api.GetJSON("/images/"+tag+"/json", &img)
		return img
	}
	ctx := context.Background()
	nineDaysAgo := time.Now().Add(-9*24*time.Hour - time.Hour)
	if err := builder(func() time.Time { return nineDaysAgo }).Ensure(ctx, images.VariantDesktop, nil); err != nil {
		t.Fatal(err)
	}
	old := inspect()
	if age, ok := images.Age(old.Config.Labels, time.Now()); !ok || age < 9*24*time.Hour {
		t.Fatalf("the first build's label %q: age %v, %v", old.Config.Labels[images.LabelBuilt], age, ok)
	}

	b := builder(time.Now)
	if err := b.Ensure(ctx, images.VariantDesktop, report); err != nil {
		t.Fatal(err)
	}
	rebuilt := inspect()
	mu.Lock()
	said := strings.Join(messages, "\n")
	mu.Unlock()
	if !strings.Contains(said, "it is 9 days old: rebuilding for security updates") {
		t.Errorf("the build does not say why; progress:\n%s", said)
	}
	if rebuilt.ID == old.ID || rebuilt.RootFS.Layers[len(rebuilt.RootFS.Layers)-1] == old.RootFS.Layers[len(old.RootFS.Layers)-1] {
		t.Errorf("the image was not built anew: %s -> %s, layers %v -> %v", old.ID, rebuilt.ID, old.RootFS.Layers, rebuilt.RootFS.Layers)
	}
	if age, ok := images.Age(rebuilt.Config.Labels, time.Now()); !ok || age > time.Hour {
		t.Errorf("the rebuilt image's label %q: age %v, %v", rebuilt.Config.Labels[images.LabelBuilt], age, ok)
	}
	if err := b.Ensure(ctx, images.VariantDesktop, nil); err != nil {
		t.Fatal(err)
	}
	if again := inspect(); again.ID != rebuilt.ID {
		t.Errorf("a new image was rebuilt again: %s -> %s", rebuilt.ID, again.ID)
	}
}
