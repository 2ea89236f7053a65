package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Agent CLIs the real-CLI tests install, pinned: a new version is a
// deliberate change of the test (its output format is what the parsers
// in package tasks read).
const (
	claudePackage = "@anthropic-ai/claude-code@2.0.14"
	codexPackage  = "@openai/codex@0.171.0"
)

// hostCADir holds the host's extra CA certificates (update-ca-certificates'
// input), which npm in the build trusts: none on most machines, the
// interceptor's on one whose outbound TLS is intercepted (this one's).
const hostCADir = "/usr/local/share/ca-certificates"

// maxCAFile bounds one CA file copied into the build.
const maxCAFile = 64 << 10

// agentCLIProject makes project's sandbox image the browser image with
// the npm package pkg installed, through the project's own Dockerfile
// (testdata/agent-cli), approved as a user would. With env set to an
// image's name (an image that has the CLI), it builds on that image
// instead and installs nothing, as before the test built its own.
func agentCLIProject(t *testing.T, project, env, pkg string) {
	t.Helper()
	dir := filepath.Join(project, ".pilot")
	if err := os.MkdirAll(filepath.Join(dir, "ca"), 0o755); err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join("testdata", "agent-cli", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if image := os.Getenv(env); image != "" {
		dockerfile = []byte("ARG PILOT_BASE\nFROM " + image + "\n")
	}
	files := map[string][]byte{
		"Dockerfile":    dockerfile,
		"agent-package": []byte(pkg),
		"ca/README":     []byte("The host's extra CA certificates (*.crt), trusted by npm in the build.\n"),
		"settings.json": []byte(`{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`),
	}
	entries, _ := os.ReadDir(hostCADir)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || !strings.HasSuffix(e.Name(), ".crt") || info.Size() > maxCAFile {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(hostCADir, e.Name())); err == nil {
			files[filepath.Join("ca", e.Name())] = data
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
