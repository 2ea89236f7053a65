package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostCADir holds the host's extra CA certificates (update-ca-certificates'
// input), which npm in the agent CLIs' layer trusts when config.json names
// them (caCertificates): none on most machines, the interceptor's on one
// whose outbound TLS is intercepted (this one's).
const hostCADir = "/usr/local/share/ca-certificates"

// agentCLIProject gives project's sandbox the agent CLI agent ("claude",
// "codex") through sandbox.agents on the browser image, the layer that
// installs it pinned (resources/docker/agents/Dockerfile: a new version
// is a deliberate change, as its output format is what package tasks
// parses), to be approved as a user would. It returns the config.json
// keys that go with it: caCertificates naming the host's extra CA files.
// With env set to an image's name (an image that has the CLI), the
// project's own Dockerfile builds on that image instead and nothing is
// installed.
func agentCLIProject(t *testing.T, project, env, agent string) string {
	t.Helper()
	dir := filepath.Join(project, ".pilot")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"settings.json": `{"sandbox": {"image": "browser", "agents": ["` + agent + `"]}}`}
	if image := os.Getenv(env); image != "" {
		files["Dockerfile"] = "ARG PILOT_BASE\nFROM " + image + "\n"
		files["settings.json"] = `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cas := []string{}
	entries, _ := os.ReadDir(hostCADir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && strings.HasSuffix(e.Name(), ".crt") {
			cas = append(cas, filepath.Join(hostCADir, e.Name()))
		}
	}
	keys, _ := json.Marshal(cas)
	return `"caCertificates": ` + string(keys) + `,`
}
