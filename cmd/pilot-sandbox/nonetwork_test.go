package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// serve carries the desktop of a sandbox without a network for as long as
// it runs; the command line, which would carry it only until it exits,
// prints no address for it and says where its desktop is.
func TestNetworkNoneDesktopIsCarriedByServe(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	os.MkdirAll(filepath.Join(project, projectfs.Dir), 0o755)
	if err := os.WriteFile(projectfs.SettingsFile(project), []byte(`{"sandbox": {"network": "none"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSidecar(t, "lsp")
	result(t, s.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "e2e", "version": "1"}}, 10*time.Second))
	st := result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	viewer, _ := st["viewerUrl"].(string)
	if st["status"] != "running" || st["network"] != "none" || !strings.HasPrefix(viewer, "http://127.0.0.1:") {
		t.Fatalf("start: %v", st)
	}
	if code, page := httpGet(t, viewer); code != http.StatusOK || !strings.Contains(page, "<html") {
		t.Errorf("GET the viewer while serve runs: %d %.200q", code, page)
	}
	out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "ls /sys/class/net"}, time.Minute))
	if out["stdout"] != "lo\n" {
		t.Errorf("interfaces: %v", out)
	}
	shot := result(t, s.call("sandbox/screenshot", map[string]any{"projectPath": project}, time.Minute))
	if shot["width"] != 1280.0 || len(shot["data"].(string)) < 1000 {
		t.Errorf("screenshot: %v", shot["width"])
	}

	text, errOut, code := cliRun(t, nil, "", "status", "--project", project)
	if code != 0 || !strings.Contains(text, "network    none: its desktop is carried by `pilot-sandbox ui`") || strings.Contains(text, "control") {
		t.Errorf("status: %d %s %s", code, text, errOut)
	}
	asJSON, errOut, code := cliRun(t, nil, "", "start", "--json", "--project", project)
	var printed map[string]any
	if code != 0 || json.Unmarshal([]byte(asJSON), &printed) != nil || printed["network"] != "none" || printed["viewerUrl"] != "" || printed["status"] != "running" {
		t.Errorf("start --json: %d %s %s", code, asJSON, errOut)
	}
	if code, _ := httpGet(t, viewer); code != http.StatusOK {
		t.Errorf("the viewer of serve stopped answering after the command line: %d", code)
	}

	if msg := s.call("shutdown", nil, 30*time.Second); msg["error"] != nil {
		t.Errorf("shutdown: %v", msg)
	}
	s.write(map[string]any{"method": "exit"})
	s.wait()
	if code, _ := httpGet(t, viewer); code != 0 {
		t.Errorf("the viewer answers %d after serve ended", code)
	}
}

// httpGet returns the status and body at url; 0 if nothing answers.
func httpGet(t *testing.T, url string) (int, string) {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
