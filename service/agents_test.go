package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

// agentsHarness is a harness with the agent CLIs' layer to build and the
// user's config.json holding userConfig.
func agentsHarness(t *testing.T, userConfig string) *harness {
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte(userConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return newHarness(t, func(c *Config) {
		c.AgentsResources = resources.AgentsImage()
		c.Policy = PolicyConfig{File: file, MinIdleStop: time.Second, Interval: time.Hour}
	})
}

// The CLIs a project's settings add are asked, naming each package and
// version, before anything is built; once approved, the container runs
// the layer on the variant's image. The user's own CLIs are not asked.
func TestAgentsFromSettingsNeedApproval(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "proxy.crt")
	os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644)
	h := agentsHarness(t, `{"agents": ["codex"], "caCertificates": ["`+ca+`"]}`)
	dir := project(t)
	ctx := context.Background()
	writeSettings(t, dir, `{"sandbox": {"agents": ["claude", "codex"]}}`)
	_, err := h.m.Start(ctx, dir)
	var ae *ApprovalError
	if !errors.As(err, &ae) || ae.Approval.Kind != ApprovalAgents {
		t.Fatalf("start: %v, want an agents approval error", err)
	}
	if s := ae.Approval.Summary; !strings.Contains(s, "@anthropic-ai/claude-code@2.0.14") || strings.Contains(s, "codex") {
		t.Errorf("summary %q: want claude's package and version, not the user's codex", s)
	}
	if len(h.docker.builds) != 0 {
		t.Fatalf("built %d images before the approval", len(h.docker.builds))
	}
	if err := h.m.Approve(ctx, dir, ae.Approval.Digest); err != nil {
		t.Fatal(err)
	}
	st, err := h.m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	last := h.docker.builds[len(h.docker.builds)-1]
	if st.Image != last.Tag || !strings.Contains(last.Tag, "-agents:") || last.BuildArgs["PILOT_BASE"] != h.m.images.Tag(images.VariantDesktop) ||
		last.BuildArgs["INSTALL_CLAUDE"] != "1" || last.BuildArgs["INSTALL_CODEX"] != "1" {
		t.Errorf("state image %s; last build %s with %v", st.Image, last.Tag, last.BuildArgs)
	}
	if names := tarNames(t, h.docker.buildTars[len(h.docker.buildTars)-1]); !strings.Contains(strings.Join(names, " "), "ca/00.crt") {
		t.Errorf("context %q, want the user's CA file", names)
	}
}

// A CA file the user names that cannot be read fails the start, naming
// caCertificates, before anything is built.
func TestAgentsUnreadableCA(t *testing.T) {
	h := agentsHarness(t, `{"agents": ["claude"], "caCertificates": ["/nonexistent/proxy.crt"]}`)
	dir := project(t)
	_, err := h.m.Start(context.Background(), dir)
	var ce *projectfs.ConfigError
	if !errors.As(err, &ce) || ce.Field != "caCertificates" || len(h.docker.builds) != 0 {
		t.Fatalf("start: %v after %d builds, want a ConfigError on caCertificates and none", err, len(h.docker.builds))
	}
}
