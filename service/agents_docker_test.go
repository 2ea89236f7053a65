package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// hostCAFiles are the host's extra CA certificates: none on most
// machines, the interceptor's on one whose outbound TLS is intercepted
// (this one's), which npm must trust to reach its registry.
func hostCAFiles() []string {
	files, _ := filepath.Glob("/usr/local/share/ca-certificates/*.crt")
	return files
}

// The agent CLIs' layer on a project's own image, on the engine: the
// project asks for claude (approved after its Dockerfile), the real CLI
// runs in its sandbox, and removing the sandbox removes the layer's image
// with the project's.
func TestAgentsLayerOnTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("installs Node.js and Claude Code into an image")
	}
	cas, _ := json.Marshal(hostCAFiles())
	config := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(config, []byte(`{"idleStop": "0", "maxRunning": 0, "disk": "0", "caCertificates": `+string(cas)+`}`), 0o600)
	m, docker := dockertest.Manager(t, func(c *service.Config) {
		c.Policy = service.PolicyConfig{File: config, MinIdleStop: time.Second, Interval: time.Hour}
	})
	dir := projectWithImage(t, docker)
	ctx := context.Background()
	writeProjectFile(t, dir, "settings.json", `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}, "agents": ["claude"]}}`)
	writeProjectFile(t, dir, "Dockerfile", "ARG PILOT_BASE\nFROM ${PILOT_BASE}\n")
	if err := m.Approve(ctx, dir, needsApproval(t, m, dir, service.ApprovalDockerfile).Digest); err != nil {
		t.Fatal(err)
	}
	ask := needsApproval(t, m, dir, service.ApprovalAgents)
	if !strings.Contains(ask.Summary, "@anthropic-ai/claude-code@") {
		t.Errorf("summary %q does not name the package and version", ask.Summary)
	}
	if err := m.Approve(ctx, dir, ask.Digest); err != nil {
		t.Fatal(err)
	}
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docker.RemoveImage(context.Background(), st.Image) })
	if !strings.Contains(st.Image, "-agents:") {
		t.Errorf("runs %s, want the agents layer's image", st.Image)
	}
	out, err := m.Exec(ctx, dir, service.ExecRequest{Command: "claude --version && id -un"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Stdout); !strings.Contains(got, "2.0.14") || !strings.HasSuffix(got, "sandbox\n") {
		t.Errorf("claude --version: %q (%s)", got, out.Stderr)
	}
	if _, err := m.Remove(ctx, dir); err != nil {
		t.Fatal(err)
	}
	own := images.ProjectTag(dockertest.Config(t).Image, service.ContainerName(dir))
	for _, tag := range []string{st.Image, own} {
		if _, err := docker.ImageLabels(ctx, tag); !errors.Is(err, service.ErrImageNotFound) {
			t.Errorf("%s outlived the sandbox: %v", tag, err)
		}
	}
}
