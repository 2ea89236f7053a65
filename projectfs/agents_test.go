package projectfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestProjectConfigAgents(t *testing.T) {
	for _, tc := range []struct {
		agents string // sandbox.agents as written; "" leaves it out
		want   []string
		reason string // part of the ConfigError's reason; "" for none
	}{
		{agents: "", want: nil},
		{agents: `[]`, want: []string{}},
		{agents: `["claude"]`, want: []string{"claude"}},
		{agents: `["codex", "claude"]`, want: []string{"codex", "claude"}},
		{agents: `["claude", "claude"]`, reason: `each at most once; it has "claude"`},
		{agents: `["gemini"]`, reason: `must be a list of "claude", "codex"`},
		{agents: `"claude"`, reason: `it is "claude"`},
		{agents: `null`, reason: "it is null"},
		{agents: `[1]`, reason: "it is [1]"},
	} {
		dir := t.TempDir()
		sandbox := `{"memory": "1g"}`
		if tc.agents != "" {
			sandbox = `{"memory": "1g", "agents": ` + tc.agents + `}`
		}
		os.MkdirAll(filepath.Join(dir, Dir), 0o755)
		os.WriteFile(SettingsFile(dir), []byte(`{"sandbox": `+sandbox+`}`), 0o644)
		cfg, err := ReadConfig(dir)
		var ce *ConfigError
		switch {
		case tc.reason != "":
			if !errors.As(err, &ce) || ce.Field != "sandbox.agents" || !strings.Contains(ce.Reason, tc.reason) {
				t.Errorf("%s: err = %v, want one for sandbox.agents saying %q", tc.agents, err, tc.reason)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.agents, err)
		case !slices.Equal(cfg.AgentNames(), tc.want) || (tc.want == nil) != (cfg.AgentNames() == nil):
			t.Errorf("%s: agents %q, want %q", tc.agents, cfg.AgentNames(), tc.want)
		}
	}
}

func TestUserConfigAgents(t *testing.T) {
	for _, tc := range []struct {
		file       string
		agents, ca []string
		badKey     string // "" for none
		reason     string
	}{
		{file: `{"agents": ["codex"], "caCertificates": ["/etc/pki/proxy.crt"]}`,
			agents: []string{"codex"}, ca: []string{"/etc/pki/proxy.crt"}},
		{file: `{"agents": ["claude", "codex"]}`, agents: []string{"claude", "codex"}},
		{file: `{"agents": ["codex", "codex"]}`, badKey: "agents", reason: `it has "codex"`},
		{file: `{"agents": ["aider"]}`, badKey: "agents", reason: `must be a list of "claude", "codex"`},
		{file: `{"agents": "claude"}`, badKey: "agents"},
		{file: `{"caCertificates": ["proxy.crt"]}`, badKey: "caCertificates", reason: `absolute paths`},
		{file: `{"caCertificates": ["/a.crt", "/a.crt"]}`, badKey: "caCertificates", reason: `each once; it has "/a.crt"`},
		{file: `{"caCertificates": "/a.crt"}`, badKey: "caCertificates"},
		{file: `{"caCertificates": [` + strings.Repeat(`"/a.crt", `, 16) + `"/b.crt"]}`, badKey: "caCertificates", reason: "at most 16"},
	} {
		path := filepath.Join(t.TempDir(), "config.json")
		os.WriteFile(path, []byte(tc.file), 0o644)
		cfg, err := ReadUserConfig(path, time.Minute)
		var ue *UserConfigError
		switch {
		case tc.badKey != "":
			if !errors.As(err, &ue) || !slices.Equal(ue.Keys(), []string{tc.badKey}) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("%s: err = %v, want one for %s saying %q", tc.file, err, tc.badKey, tc.reason)
			}
			if cfg.Agents != nil || cfg.CACertificates != nil {
				t.Errorf("%s: a wrong key changed the config: agents %q, caCertificates %q", tc.file, cfg.Agents, cfg.CACertificates)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.file, err)
		case !slices.Equal(cfg.Agents, tc.agents) || !slices.Equal(cfg.CACertificates, tc.ca):
			t.Errorf("%s: agents %q, caCertificates %q; want %q, %q", tc.file, cfg.Agents, cfg.CACertificates, tc.agents, tc.ca)
		}
	}
}

func TestReadCACertificate(t *testing.T) {
	dir := t.TempDir()
	pem := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	os.WriteFile(filepath.Join(dir, "ok.crt"), pem, 0o644)
	os.Symlink(filepath.Join(dir, "ok.crt"), filepath.Join(dir, "link.crt"))
	os.WriteFile(filepath.Join(dir, "big.crt"), make([]byte, MaxCACertificate+1), 0o644)
	os.Mkdir(filepath.Join(dir, "dir.crt"), 0o755)
	for _, tc := range []struct{ name, reason string }{
		{"ok.crt", ""},
		{"link.crt", ""},
		{"big.crt", "larger than 64 KiB"},
		{"dir.crt", "not a regular file"},
		{"missing.crt", "no such file"},
	} {
		data, err := ReadCACertificate(filepath.Join(dir, tc.name))
		switch {
		case tc.reason == "" && (err != nil || string(data) != string(pem)):
			t.Errorf("%s: %q, %v; want the file", tc.name, data, err)
		case tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)):
			t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.reason)
		}
	}
}
