package service_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// ageTestDockerfile is a small image whose one layer differs at every
// build that really runs its step: a build from the cache keeps it.
const ageTestDockerfile = `ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN cat /proc/sys/kernel/random/uuid >/build-id
`

// TestAnOldImageIsRebuiltForSecurityUpdates builds an image with a clock
// set 9 days back (the sidecar's own label says when it was built), then
// ensures it with the real clock and rebuildAfter "168h": the build says
// why, runs its steps anew (not from the cache), and labels the image as
// new; a further ensure builds nothing.
func TestAnOldImageIsRebuiltForSecurityUpdates(t *testing.T) {
	api := dockertest.NewAPI(t)
	tag := fmt.Sprintf("pilot-sandbox-agetest:%d", time.Now().UnixNano())
	t.Cleanup(func() { api.Delete("/images/" + tag + "?force=1") })
	config := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(config, []byte(`{"rebuildAfter": "168h"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	manager := func(now func() time.Time) *service.Manager {
		m, _ := dockertest.Manager(t, func(c *service.Config) {
			c.Image = tag
			c.Resources = fstest.MapFS{"Dockerfile": {Data: []byte(ageTestDockerfile)}}
			c.BrowserResources, c.DefaultVariant = nil, service.VariantDesktop
			c.Policy.File = config
			c.Now = now
		})
		return m
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
	if err := manager(func() time.Time { return nineDaysAgo }).EnsureImage(ctx, ""); err != nil {
		t.Fatal(err)
	}
	old := inspect()
	if age, ok := service.ImageAge(old.Config.Labels, time.Now()); !ok || age < 9*24*time.Hour {
		t.Fatalf("the first build's label %q: age %v, %v", old.Config.Labels[service.LabelImageBuilt], age, ok)
	}

	m := manager(time.Now)
	messages := progressOf(t, m)
	if err := m.EnsureImage(ctx, ""); err != nil {
		t.Fatal(err)
	}
	rebuilt := inspect()
	if !pollUntil(t, "the build says why", func() bool {
		return strings.Contains(messages(), "it is 9 days old: rebuilding for security updates")
	}) {
		t.Logf("progress:\n%s", messages())
	}
	if rebuilt.ID == old.ID || rebuilt.RootFS.Layers[len(rebuilt.RootFS.Layers)-1] == old.RootFS.Layers[len(old.RootFS.Layers)-1] {
		t.Errorf("the image was not built anew: %s -> %s, layers %v -> %v", old.ID, rebuilt.ID, old.RootFS.Layers, rebuilt.RootFS.Layers)
	}
	if age, ok := service.ImageAge(rebuilt.Config.Labels, time.Now()); !ok || age > time.Hour {
		t.Errorf("the rebuilt image's label %q: age %v, %v", rebuilt.Config.Labels[service.LabelImageBuilt], age, ok)
	}
	if err := m.EnsureImage(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if again := inspect(); again.ID != rebuilt.ID {
		t.Errorf("a new image was rebuilt again: %s -> %s", rebuilt.ID, again.ID)
	}
}

// progressOf collects m's progress messages until the test ends; the
// function returned gives those so far, one a line.
func progressOf(t *testing.T, m *service.Manager) func() string {
	events, cancel := m.Subscribe()
	t.Cleanup(cancel)
	var mu sync.Mutex
	var lines []string
	go func() {
		for ev := range events {
			if ev.Kind == service.EventProgress {
				mu.Lock()
				lines = append(lines, ev.Progress.Message)
				mu.Unlock()
			}
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
}
