package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// pilot-sandbox net changes the user's own policy (config.json, every
// other key kept) and shows the policy in force with where each rule came
// from, a decision kept for the project, and the project's log.
func TestCommandLineNet(t *testing.T) {
	state, config, dir := t.TempDir(), t.TempDir(), t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + config}
	file := filepath.Join(config, "pilot-sandbox", "config.json")
	os.MkdirAll(filepath.Dir(file), 0o700)
	os.WriteFile(file, []byte("{\n  \"maxRunning\":   3\n}\n"), 0o600)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return cliRun(t, env, "", append([]string{"net"}, args...)...)
	}
	for _, args := range [][]string{{"allow", "Example.org:443"}, {"deny", "tracker.example"}, {"allow", "tracker.example"}, {"deny", "example.org:443"}, {"preset", "locked"}} {
		if out, errOut, code := run(args...); code != 0 {
			t.Fatalf("net %v: %d %s %s", args, code, out, errOut)
		}
	}
	data, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(data), "{\n  \"maxRunning\":   3,\n") {
		t.Errorf("the other keys changed:\n%s", data)
	}
	cfg, err := projectfs.ReadUserConfig(file, projectfs.MinIdleStop)
	if err != nil || cfg.MaxRunning != 3 || cfg.Network.Preset != "locked" || len(cfg.Network.Allow) != 1 || cfg.Network.Allow[0].String() != "tracker.example" ||
		len(cfg.Network.Deny) != 1 || cfg.Network.Deny[0].String() != "example.org:443" {
		t.Errorf("config = %+v, %v\n%s", cfg.Network, err, data)
	}
	if _, errOut, code := run("allow", "a..b"); code != 1 || !strings.Contains(errOut, "empty label") {
		t.Errorf("a bad rule: %d %s", code, errOut)
	}
	if after, _ := os.ReadFile(file); string(after) != string(data) {
		t.Errorf("a bad rule changed the file")
	}
	if _, errOut, code := run("preset", "wide"); code != 1 || !strings.Contains(errOut, "choose open, dev, locked") {
		t.Errorf("a bad preset: %d %s", code, errOut)
	}

	project, _ := projectfs.Canonical(dir)
	decisions := projectfs.NewDecisions(filepath.Join(state, "pilot-sandbox"))
	decisions.Change(project, func([]projectfs.Decision) ([]projectfs.Decision, error) {
		return []projectfs.Decision{{Kind: "network", Rule: "api.example.com:443", Allow: true, DecidedAt: 1}}, nil
	})
	projectfs.NewNetLog(filepath.Join(state, "pilot-sandbox")).Append(project, []projectfs.NetLogEntry{
		{Time: 2, Host: "tracker.example", Port: 443, Protocol: "tcp", Decision: "allow", By: "rule", BytesIn: 2048}})
	out, errOut, code := run("--json", "--project", dir)
	if code != 0 {
		t.Fatalf("net --json: %d %s", code, errOut)
	}
	var shown struct {
		Policy struct {
			Preset struct{ Name, Source string }
			Rules  []struct{ List, Rule, Source string }
		}
		Log []projectfs.NetLogEntry
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatal(err)
	}
	if p := shown.Policy; p.Preset.Name != "locked" || p.Preset.Source != "config" || len(p.Rules) != 3 ||
		p.Rules[2].Rule != "api.example.com:443" || p.Rules[2].Source != "kept" || len(shown.Log) != 1 {
		t.Errorf("shown: %+v", shown)
	}
	if out, _, _ := run("--project", dir); !strings.Contains(out, "allow  api.example.com:443") || !strings.Contains(out, "tracker.example:443") {
		t.Errorf("net:\n%s", out)
	}
	if _, errOut, code := run("forget", "nope.example", "--project", dir); code != 1 || !strings.Contains(errOut, "kept: api.example.com:443") {
		t.Errorf("forget an unknown rule: %d %s", code, errOut)
	}
	if out, errOut, code := run("forget", "API.example.com:443", "--project", dir); code != 0 || !strings.Contains(out, "Forgot 1") {
		t.Errorf("forget: %d %s %s", code, out, errOut)
	}
	if kept, _ := decisions.Read(project); len(kept) != 0 {
		t.Errorf("still kept: %+v", kept)
	}
}
