package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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
