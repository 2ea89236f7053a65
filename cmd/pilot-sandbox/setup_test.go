package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// mcp --enable-tools writes the switch where docs/mcp.md says:
// "dockerToolsEnabled": true in the project's .pilot/settings.json,
// keeping the file's other keys.
func TestEnableToolsWritesTheProjectSwitch(t *testing.T) {
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(project, projectfs.Dir), 0o755)
	if err := os.WriteFile(projectfs.SettingsFile(project), []byte(`{"sandbox": {"image": "desktop"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, stderr := mcpClient(t, "--project", project, "--enable-tools")
	cs.Close()
	data, err := os.ReadFile(filepath.Join(project, ".pilot", "settings.json"))
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var settings map[string]any
	if err := json.Unmarshal(data, &settings); err != nil {
		t.Fatal(err)
	}
	if settings["dockerToolsEnabled"] != true || settings["sandbox"] == nil {
		t.Errorf("settings.json after --enable-tools: %s; want dockerToolsEnabled true and the sandbox key kept", data)
	}
}

// build of an image that is up to date says so and nothing of building
// (scripts/run.sh and dev-env.sh let it speak for the image).
func TestBuildSaysBuildingOnlyWhenItBuilds(t *testing.T) {
	dockertest.Engine(t)
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	if _, errOut, code := cliRun(t, env, "", "build"); code != 0 {
		t.Fatalf("build: %d %s", code, errOut)
	}
	out, errOut, code := cliRun(t, env, "", "build")
	if code != 0 || !strings.Contains(out, "is up to date") || strings.Contains(strings.ToLower(out+errOut), "building") {
		t.Errorf("build of an image up to date (%d): %q %q; want it up to date, without building", code, out, errOut)
	}
}
