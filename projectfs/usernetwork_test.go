package projectfs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// setAllow is an edit that sets network.allow.
func setAllow(rules ...string) func(map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	return func(map[string]json.RawMessage) (map[string]json.RawMessage, error) {
		list, _ := json.Marshal(rules)
		return map[string]json.RawMessage{"allow": list}, nil
	}
}

func TestEditUserNetworkKeepsEveryOtherByte(t *testing.T) {
	for _, tc := range []struct {
		name, before, after string
	}{
		{name: "no file", before: "", after: "{\n  \"network\": {\n    \"allow\": [\n      \"example.org\"\n    ]\n  }\n}\n"},
		{name: "other keys", before: "{\n\t\"idleStop\":   \"2h\" ,\n\t\"caps\": {\"memory\": \"8g\"}\n}\n",
			after: "{\n\t\"idleStop\":   \"2h\" ,\n\t\"caps\": {\"memory\": \"8g\"},\n  \"network\": {\n    \"allow\": [\n      \"example.org\"\n    ]\n  }\n}\n"},
		{name: "a network with other members", before: "{\"network\": {\"preset\":  \"locked\", \"allow\": [\"old.example\"], \"askTimeout\": \"90s\"}, \"maxRunning\":  2}",
			after: "{\"network\": {\n    \"preset\": \"locked\",\n    \"allow\": [\n      \"example.org\"\n    ],\n    \"askTimeout\": \"90s\"\n  }, \"maxRunning\":  2}"},
		{name: "network default", before: `{"network": "default"}`, after: "{\"network\": {\n    \"allow\": [\n      \"example.org\"\n    ]\n  }}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pilot-sandbox", "config.json")
			if tc.before != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				os.WriteFile(path, []byte(tc.before), 0o640)
			}
			if err := projectfs.EditUserNetwork(path, setAllow("example.org")); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tc.after {
				t.Errorf("file:\n%s\nwant:\n%s", got, tc.after)
			}
			cfg, err := projectfs.ReadUserConfig(path, projectfs.MinIdleStop)
			if err != nil || len(cfg.Network.Allow) != 1 {
				t.Errorf("read back: %+v, %v", cfg.Network, err)
			}
			if info, _ := os.Stat(path); tc.before != "" && info.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want the file's own", info.Mode())
			}
		})
	}
}

func TestEditUserNetworkRefusesAndChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name, before, words string
		rules               []string
	}{
		{name: "network none", before: `{"network": "none"}`, words: `"none"`, rules: []string{"example.org"}},
		{name: "not JSON", before: `{"network": `, words: "not a JSON object", rules: []string{"example.org"}},
		{name: "network not an object", before: `{"network": 3}`, words: "not an object", rules: []string{"example.org"}},
		{name: "a bad rule", before: `{"network": {}}`, words: "network.allow entry 1", rules: []string{"a..b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			os.WriteFile(path, []byte(tc.before), 0o600)
			err := projectfs.EditUserNetwork(path, setAllow(tc.rules...))
			if err == nil || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("err = %v, want it to say %q", err, tc.words)
			}
			if got, _ := os.ReadFile(path); string(got) != tc.before {
				t.Errorf("the file changed: %s", got)
			}
		})
	}
}

// A config.json that is a link into the user's dotfiles stays a link; its
// target is what changes.
func TestEditUserNetworkFollowsTheUsersLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "pilot.json")
	os.MkdirAll(filepath.Dir(target), 0o700)
	os.WriteFile(target, []byte(`{"maxRunning": 3}`), 0o600)
	link := filepath.Join(dir, "config.json")
	os.Symlink(target, link)
	if err := projectfs.EditUserNetwork(link, setAllow("example.org")); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", info.Mode(), err)
	}
	if got, _ := os.ReadFile(target); !strings.Contains(string(got), `"maxRunning": 3`) || !strings.Contains(string(got), "example.org") {
		t.Errorf("target: %s", got)
	}
}
