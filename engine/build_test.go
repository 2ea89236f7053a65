package engine_test

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestAProjectBuildReachesNoOtherContainer: a project's build runs its RUN
// steps on the sandboxes' network (BuildSpec.SandboxScope), where the
// engine drops traffic between containers. On the engine's default bridge
// a step reaches every container there (the user's database, say); on
// the sandboxes' network it reaches none.
func TestAProjectBuildReachesNoOtherContainer(t *testing.T) {
	docker, _ := runningSandbox(t) // the sandbox image is built, with python3
	api := dockertest.NewAPI(t)
	var created struct{ ID string }
	api.PostJSON("/containers/create", map[string]any{
		"Image":      cmp.Or(dockertest.Config(t).Image, images.DefaultTag), // PILOT_IMAGE, or the desktop image's default
		"Entrypoint": []string{"python3", "-m", "http.server", "8000"},
		"User":       "sandbox",
		"Labels":     map[string]string{"pilot.test": "build-target"},
	}, &created)
	t.Cleanup(func() { api.Delete("/containers/" + created.ID + "?force=true") })
	api.Post("/containers/" + created.ID + "/start")
	target := containerIP(t, api, created.ID)

	// Each try gives up after a second: the sandboxes' network drops what
	// it does not let through, and a connect would wait minutes.
	step := fmt.Sprintf(`for i in $(seq 20); do timeout 1 bash -c "exec 3<>/dev/tcp/%s/8000" 2>/dev/null && { echo REACHED; exit 0; }; sleep 0.1; done; echo UNREACHED`, target)
	reaches := func(scope string) string {
		t.Helper()
		var out []string
		err := docker.BuildImage(context.Background(), images.BuildSpec{
			Tag:          "pilot-sandbox-test-buildnet:latest",
			Context:      contextOf(t, "FROM debian:bookworm-slim\nRUN bash -c '"+step+"'\n"),
			NoCache:      true,
			SandboxScope: scope,
			Output:       func(line string) { out = append(out, line) },
		})
		if err != nil {
			t.Fatalf("build: %v\n%s", err, strings.Join(out, "\n"))
		}
		for _, line := range out {
			if line == "REACHED" || line == "UNREACHED" {
				return line
			}
		}
		t.Fatalf("the step said nothing:\n%s", strings.Join(out, "\n"))
		return ""
	}
	t.Cleanup(func() { api.Delete("/images/pilot-sandbox-test-buildnet:latest?force=true") })
	if got := reaches(""); got != "REACHED" {
		t.Errorf("on the default bridge the step %s the container there", got)
	}
	if got := reaches(dockertest.TestScope); got != "UNREACHED" {
		t.Errorf("on the sandboxes' network the step %s a container of the default bridge", got)
	}
}

// contextOf is a build context holding only a Dockerfile.
func contextOf(t *testing.T, dockerfile string) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))})
	tw.Write([]byte(dockerfile))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// ImageTags lists the tags of the images with a label's value: the
// sandbox image by its build hash, nothing for a value no image has.
func TestImageTagsByLabel(t *testing.T) {
	direct, image := withImage(t)
	ctx := context.Background()
	labels, err := direct.ImageLabels(ctx, image)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := direct.ImageTags(ctx, images.LabelHash, labels[images.LabelHash])
	if err != nil || !slices.Contains(tags, image) {
		t.Errorf("ImageTags by %s: %q, %v; want %s among them", images.LabelHash, tags, err, image)
	}
	if tags, err := direct.ImageTags(ctx, images.LabelHash, "no-image-has-this"); err != nil || len(tags) != 0 {
		t.Errorf("ImageTags of a value no image has: %q, %v", tags, err)
	}
}
