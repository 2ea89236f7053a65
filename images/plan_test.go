package images

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

func TestProjectTag(t *testing.T) {
	const container = "pilot-sandbox-web-0123456789"
	for _, tc := range []struct{ image, want string }{
		{"", "pilot-sandbox-project:web-0123456789"},
		{"pilot-sandbox:latest", "pilot-sandbox-project:web-0123456789"},
		{"registry:5000/team/pilot:v2", "registry:5000/team/pilot-project:web-0123456789"},
		{"registry:5000/pilot", "registry:5000/pilot-project:web-0123456789"},
	} {
		if got := ProjectTag(tc.image, container); got != tc.want {
			t.Errorf("ProjectTag(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}

// dockerfileProject is a project whose .pilot/Dockerfile holds text.
func dockerfileProject(t *testing.T, text string) string {
	t.Helper()
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, ".pilot"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".pilot", "Dockerfile"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return project
}

var browserLayer = fstest.MapFS{"Dockerfile": {Data: []byte("FROM x\n")}}

// The plan is the variant the settings name, the fallback when they name
// none, or the project's own image with its context read; a Dockerfile
// without a browser image to build on is ErrNoBrowser.
func TestPlan(t *testing.T) {
	b := newBuilder(t, newFakeEngine(), func(c *Config) { c.BrowserResources = browserLayer })
	project := dockerfileProject(t, "FROM base\nRUN true\n")
	own := Project{Tag: "pilot-sandbox-project:web", Labels: map[string]string{"pilot.project": project}, Scope: "test"}
	for _, tc := range []struct {
		image         string
		variant, tag  string
		ownBuildsFrom string
	}{
		{"", VariantDesktop, "pilot-sandbox:test", ""},
		{`"browser"`, VariantBrowser, "pilot-sandbox-browser:test", ""},
		{`{"dockerfile": ".pilot/Dockerfile"}`, VariantProject, own.Tag, "Dockerfile"},
	} {
		plan, err := b.Plan(project, projectfs.Config{Image: projectfs.ImageChoice(tc.image)}, VariantDesktop, own)
		if err != nil {
			t.Fatalf("%s: %v", tc.image, err)
		}
		if plan.Variant != tc.variant || plan.Tag != tc.tag || (plan.Project != nil) != (tc.ownBuildsFrom != "") {
			t.Errorf("%s: planned %+v", tc.image, plan)
		}
		if plan.Project != nil && (plan.Project.Context.Name != tc.ownBuildsFrom || plan.Project.Context.Digest == "" ||
			plan.Project.Scope != own.Scope || !maps.Equal(plan.Project.Labels, own.Labels)) {
			t.Errorf("%s: the project's image is %+v", tc.image, *plan.Project)
		}
	}
	without := newBuilder(t, newFakeEngine(), nil)
	_, err := without.Plan(project, projectfs.Config{Image: `{"dockerfile": ".pilot/Dockerfile"}`}, VariantDesktop, own)
	if !errors.Is(err, ErrNoBrowser) {
		t.Errorf("a Dockerfile without a browser image: %v", err)
	}
}

// A project's own image is built on the browser image, which is made sure
// of first; what its container keeps of the browser image is every pinned
// label, "" where the browser image has none.
func TestEnsurePlanAndPinned(t *testing.T) {
	f := newFakeEngine()
	b := newBuilder(t, f, func(c *Config) { c.BrowserResources = browserLayer })
	project := dockerfileProject(t, "FROM base\n")
	plan, err := b.Plan(project, projectfs.Config{Image: `{"dockerfile": ".pilot/Dockerfile"}`}, VariantDesktop, Project{Tag: "p:web"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EnsurePlan(context.Background(), plan, nil); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, spec := range f.builds {
		tags = append(tags, spec.Tag)
	}
	if len(tags) != 3 || tags[1] != "pilot-sandbox-browser:test" || tags[2] != "p:web" {
		t.Fatalf("built %v", tags)
	}
	f.images["pilot-sandbox-browser:test"][LabelDesktopUser] = "desktop"
	f.images["pilot-sandbox-browser:test"]["other"] = "x"
	pinned, err := b.Pinned(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pinned) != len(PinnedLabels) || pinned[LabelDesktopUser] != "desktop" || pinned[LabelBrowser] != "" {
		t.Errorf("pinned %v", pinned)
	}
	if _, ok := pinned[LabelViewer]; !ok {
		t.Errorf("pinned %v: no %s to override the project's", pinned, LabelViewer)
	}
	if b.ContextChanged(context.Background(), "p:web", project, ".pilot/Dockerfile") {
		t.Error("an image built from the project's context is said to have changed")
	}
	if err := os.WriteFile(filepath.Join(project, ".pilot", "Dockerfile"), []byte("FROM base\nRUN true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !b.ContextChanged(context.Background(), "p:web", project, ".pilot/Dockerfile") {
		t.Error("a changed Dockerfile is not seen")
	}
	if b.ContextChanged(context.Background(), "p:gone", project, ".pilot/Dockerfile") {
		t.Error("an image that cannot be read is said to have changed")
	}
}
