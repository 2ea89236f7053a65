package projectfs

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
)

func TestReadUserConfig(t *testing.T) {
	def := DefaultUserConfig()
	with := func(change func(*UserConfig)) UserConfig {
		c := DefaultUserConfig()
		change(&c)
		return c
	}
	for _, tc := range []struct {
		name    string
		file    string // "" leaves no file
		want    UserConfig
		badKeys []string // nil: no error
		reason  string   // part of the error's text
	}{
		{name: "no file", want: def},
		{name: "empty object", file: "{}", want: def},
		{
			name: "every key",
			file: `{"idleStop": "1h30m", "maxRunning": 2, "maxTasks": 3, "disk": "20g", "caps": {"memory": "8g", "cpus": 3.5, "processes": 8192, "shmSize": "1g"}, "rebuildAfter": "72h", "closeAction": "stop", "recordingMaxBytes": "1g", "recordTasks": true}`,
			want: UserConfig{IdleStop: 90 * time.Minute, MaxRunning: 2, MaxTasks: 3, DiskBytes: 20 << 30,
				Caps: Caps{MemoryBytes: 8 << 30, CPUs: 3.5, Processes: 8192, ShmBytes: 1 << 30}, RebuildAfter: 72 * time.Hour, CloseAction: CloseStop,
				RecordingMaxBytes: 1 << 30, RecordTasks: true},
		},
		{name: "recordTasks not a boolean", file: `{"recordTasks": "yes"}`, want: def,
			badKeys: []string{"recordTasks"}, reason: `recordTasks must be true or false; it is "yes"`},
		{name: "recordingMaxBytes too small", file: `{"recordingMaxBytes": "10k"}`, want: def,
			badKeys: []string{"recordingMaxBytes"}, reason: "recordingMaxBytes must be at least 1MiB"},
		{name: "closeAction neither pause nor stop", file: `{"closeAction": "hibernate"}`, want: def,
			badKeys: []string{"closeAction"}, reason: `closeAction must be "pause" or "stop"; it is "hibernate"`},
		{name: "closeAction not a string", file: `{"closeAction": true}`, want: def, badKeys: []string{"closeAction"}},
		{name: "zeros turn policies off", file: `{"idleStop": "0", "maxRunning": 0, "disk": "0", "rebuildAfter": "0"}`,
			want: with(func(c *UserConfig) { c.IdleStop, c.MaxRunning, c.DiskBytes, c.RebuildAfter = 0, 0, 0, 0 })},
		{name: "rebuildAfter below the minimum", file: `{"rebuildAfter": "168s"}`, want: def,
			badKeys: []string{"rebuildAfter"}, reason: `rebuildAfter must be at least 1h, or "0" for never; it is "168s"`},
		{name: "rebuildAfter not a duration", file: `{"rebuildAfter": "weekly"}`, want: def,
			badKeys: []string{"rebuildAfter"}, reason: `rebuildAfter must be a duration such as "168h", or "0" for never; it is "weekly"`},
		{name: "rebuildAfter a number", file: `{"rebuildAfter": 168}`, want: def, badKeys: []string{"rebuildAfter"}, reason: "rebuildAfter must be a duration"},
		{name: "rebuildAfter negative", file: `{"rebuildAfter": "-1h"}`, want: def, badKeys: []string{"rebuildAfter"}},
		{name: "caps in part", file: `{"caps": {"cpus": 1}}`, want: with(func(c *UserConfig) { c.Caps.CPUs = 1 })},
		{name: "idleStop below the minimum", file: `{"idleStop": "30s"}`, want: def,
			badKeys: []string{"idleStop"}, reason: `idleStop must be at least 1m, or "0" for never; it is "30s"`},
		{name: "idleStop not a duration", file: `{"idleStop": "soon"}`, want: def,
			badKeys: []string{"idleStop"}, reason: `idleStop must be a duration such as "30m"`},
		{name: "idleStop a number", file: `{"idleStop": 30}`, want: def, badKeys: []string{"idleStop"}, reason: "it is 30"},
		{name: "idleStop negative", file: `{"idleStop": "-5m"}`, want: def, badKeys: []string{"idleStop"}},
		{name: "maxRunning fractional", file: `{"maxRunning": 2.5}`, want: def,
			badKeys: []string{"maxRunning"}, reason: "maxRunning must be a whole number from 0 to 1000 (0 for no cap); it is 2.5"},
		{name: "maxRunning negative", file: `{"maxRunning": -1}`, want: def, badKeys: []string{"maxRunning"}},
		{name: "maxTasks zero", file: `{"maxTasks": 0}`, want: def,
			badKeys: []string{"maxTasks"}, reason: "maxTasks must be a whole number from 1 to 16 (1, one task at a time); it is 0"},
		{name: "maxTasks too many", file: `{"maxTasks": 17}`, want: def, badKeys: []string{"maxTasks"}},
		{name: "models", file: `{"models": {"anthropic": {"apiKeyEnv": "MY_KEY"}, "openai": {"apiKeyEnv": "OAI", "baseUrl": "http://127.0.0.1:9/"}}}`,
			want: with(func(c *UserConfig) {
				c.Models = map[string]ModelProvider{"anthropic": {APIKeyEnv: "MY_KEY"}, "openai": {APIKeyEnv: "OAI", BaseURL: "http://127.0.0.1:9"}}
			})},
		{name: "models: a key instead of a variable", file: `{"models": {"anthropic": {"apiKeyEnv": "sk-ant-123"}}}`,
			want: with(func(c *UserConfig) { c.Models = map[string]ModelProvider{} }), badKeys: []string{"models.anthropic.apiKeyEnv"}, reason: "never the key itself"},
		{name: "models: the key itself", file: `{"models": {"anthropic": {"apiKey": "sk-ant-123"}}}`,
			want: with(func(c *UserConfig) { c.Models = map[string]ModelProvider{} }), badKeys: []string{"models.anthropic"}, reason: "must be an object with apiKeyEnv"},
		{name: "models: an unknown provider", file: `{"models": {"gemini": {"apiKeyEnv": "G"}, "openai": {"apiKeyEnv": "O"}}}`,
			want: with(func(c *UserConfig) { c.Models = map[string]ModelProvider{"openai": {APIKeyEnv: "O"}} }), badKeys: []string{"models.gemini"}, reason: "known: anthropic, openai"},
		{name: "models: a base URL with a password", file: `{"models": {"openai": {"apiKeyEnv": "O", "baseUrl": "https://u:p@x.example"}}}`,
			want: with(func(c *UserConfig) { c.Models = map[string]ModelProvider{} }), badKeys: []string{"models.openai.baseUrl"}, reason: "no user or password"},
		{name: "models: a base URL not http", file: `{"models": {"openai": {"apiKeyEnv": "O", "baseUrl": "file:///etc"}}}`,
			want: with(func(c *UserConfig) { c.Models = map[string]ModelProvider{} }), badKeys: []string{"models.openai.baseUrl"}, reason: "http or https URL"},
		{name: "models not an object", file: `{"models": ["anthropic"]}`, want: def, badKeys: []string{"models"}},
		{name: "maxRunning a string", file: `{"maxRunning": "4"}`, want: def, badKeys: []string{"maxRunning"}},
		{name: "disk too small", file: `{"disk": "1m"}`, want: def, badKeys: []string{"disk"}, reason: "disk must be at least 64MiB"},
		{name: "disk not a size", file: `{"disk": "lots"}`, want: def, badKeys: []string{"disk"}, reason: `disk must be a size such as "512m"`},
		{name: "caps not an object", file: `{"caps": 4}`, want: def, badKeys: []string{"caps"}},
		{name: "cap below the bound", file: `{"caps": {"memory": "100m", "processes": 10, "cpus": 0.1, "shmSize": "1m"}}`, want: def,
			badKeys: []string{"caps.cpus", "caps.memory", "caps.processes", "caps.shmSize"}},
		{name: "unknown cap", file: `{"caps": {"gpus": 1}}`, want: def, badKeys: []string{"caps.gpus"}, reason: "caps.gpus is not a known key"},
		{name: "unknown key", file: `{"idlestop": "5m"}`, want: def, badKeys: []string{"idlestop"}, reason: "idlestop is not a known key (known: idleStop, maxRunning, maxTasks, disk, caps, network, rebuildAfter, models, closeAction, recordingMaxBytes, recordTasks, agents, caCertificates)"},
		{name: "good keys apply beside bad ones", file: `{"maxRunning": 1, "disk": "1k"}`,
			want: with(func(c *UserConfig) { c.MaxRunning = 1 }), badKeys: []string{"disk"}},
		{name: "network none", file: `{"network": "none"}`, want: with(func(c *UserConfig) { c.Network.None = true })},
		{name: "network default", file: `{"network": "default"}`, want: def},
		{name: "a network policy", file: `{"network": {"preset": "locked", "allow": ["Example.org:443"], "askTimeout": "30s"}}`,
			want: with(func(c *UserConfig) {
				c.Network = netpolicy.Config{Preset: "locked", Allow: []netpolicy.Rule{mustRule(t, "example.org:443")}, AskTimeout: 30 * time.Second}
			})},
		{name: "a network rule that is not one", file: `{"network": {"allow": ["ok.example", "a..b"]}, "maxRunning": 2}`,
			want: with(func(c *UserConfig) { c.MaxRunning = 2 }), badKeys: []string{"network.allow"}, reason: `network.allow entry 2: "a..b" has an empty label`},
		{name: "network neither object nor none", file: `{"network": "wide"}`, want: def, badKeys: []string{"network"}},
		{name: "an unknown network key", file: `{"network": {"presets": "dev"}}`, want: def, badKeys: []string{"network.presets"}},
		{name: "not JSON", file: `{"maxRunning": 1`, want: def, badKeys: []string{""}, reason: "is not valid JSON"},
		{name: "not an object", file: `[1]`, want: def, badKeys: []string{""}, reason: "config.json: is not a JSON object"},
		{name: "null", file: `null`, want: def, badKeys: []string{""}, reason: "is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pilot-sandbox", "config.json")
			if tc.file != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				os.WriteFile(path, []byte(tc.file), 0o600)
			}
			got, err := ReadUserConfig(path, MinIdleStop)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("config = %+v, want %+v", got, tc.want)
			}
			if tc.badKeys == nil {
				if err != nil {
					t.Fatalf("error = %v, want none", err)
				}
				return
			}
			ue, ok := err.(*UserConfigError)
			if !ok {
				t.Fatalf("error = %v, want a *UserConfigError", err)
			}
			if keys := ue.Keys(); !slices.Equal(keys, tc.badKeys) {
				t.Errorf("keys at fault = %q, want %q", keys, tc.badKeys)
			}
			if !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error = %q, want the file and %q", err, tc.reason)
			}
		})
	}
}

func mustRule(t *testing.T, s string) netpolicy.Rule {
	r, err := netpolicy.ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReadUserConfigTestMinimum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(path, []byte(`{"idleStop": "2s"}`), 0o600)
	got, err := ReadUserConfig(path, time.Second)
	if err != nil || got.IdleStop != 2*time.Second {
		t.Fatalf("with a minimum of 1s: %v, %v; want 2s", got.IdleStop, err)
	}
	if _, err := ReadUserConfig(path, MinIdleStop); err == nil {
		t.Fatal("2s passed the real minimum")
	}
}

func TestReadUserConfigUnreadable(t *testing.T) {
	dir := t.TempDir() // a directory where the file should be
	got, err := ReadUserConfig(dir, MinIdleStop)
	if !reflect.DeepEqual(got, DefaultUserConfig()) || err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("got %+v, %v; want the defaults and 'cannot be read'", got, err)
	}
}

func TestUserConfigString(t *testing.T) {
	if got, want := DefaultUserConfig().String(), "idleStop 30m, maxRunning 4, maxTasks 1, disk 10GiB, caps: memory 4GiB, cpus 2, processes 4096, shmSize 2GiB, network preset dev, rebuildAfter 168h, closeAction pause"; got != want {
		t.Errorf("defaults = %q, want %q", got, want)
	}
	off := UserConfig{MaxTasks: 1, Caps: DefaultUserConfig().Caps}
	if got := off.String(); !strings.HasPrefix(got, "idleStop 0 (never), maxRunning 0 (no cap), maxTasks 1, disk 0 (no limit)") {
		t.Errorf("off = %q", got)
	}
	for d, want := range map[time.Duration]string{90 * time.Minute: "1h30m", 2 * time.Hour: "2h", 45 * time.Second: "45s", time.Minute: "1m"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestActivityIsSharedThroughTheStateDirectory(t *testing.T) {
	state := t.TempDir()
	a, b := NewActivity(state), NewActivity(state) // two processes
	if !a.Last("/p").IsZero() {
		t.Fatal("a mark before any use")
	}
	at := time.Unix(1_700_000_000, 0)
	if err := a.Touch("/p", at); err != nil {
		t.Fatal(err)
	}
	if got := b.Last("/p"); !got.Equal(at) {
		t.Fatalf("the other process sees %v, want %v", got, at)
	}
	later := at.Add(time.Minute)
	if err := b.Touch("/p", later); err != nil || !a.Last("/p").Equal(later) {
		t.Fatalf("touch again: %v; last = %v", err, a.Last("/p"))
	}
	if !a.Last("/q").IsZero() {
		t.Fatal("another project shares the mark")
	}
	a.Forget("/p")
	if !b.Last("/p").IsZero() {
		t.Fatal("forgotten, still marked")
	}
	if none := NewActivity(""); none.Touch("/p", at) != nil || !none.Last("/p").IsZero() {
		t.Fatal("without a state directory, marks exist")
	}
}

func TestCanonicalOrGone(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	real := filepath.Join(root, "real")
	os.Mkdir(real, 0o755)
	os.Symlink(real, filepath.Join(root, "link"))
	os.WriteFile(filepath.Join(root, "file"), nil, 0o644)
	for _, tc := range []struct {
		path, want string
		fails      bool
	}{
		{path: real, want: real},
		{path: filepath.Join(root, "link") + "/", want: real},
		{path: filepath.Join(root, "link", "gone", "deeper"), want: filepath.Join(real, "gone", "deeper")},
		{path: filepath.Join(root, "gone") + "/./", want: filepath.Join(root, "gone")},
		{path: "relative/gone", fails: true},
		{path: filepath.Join(root, "file"), fails: true},
	} {
		got, err := CanonicalOrGone(tc.path)
		if tc.fails != (err != nil) || got != tc.want {
			t.Errorf("CanonicalOrGone(%q) = %q, %v; want %q (fails: %v)", tc.path, got, err, tc.want, tc.fails)
		}
	}
	if Gone(real) || !Gone(filepath.Join(root, "gone")) {
		t.Error("Gone is wrong")
	}
}
