package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

func ptr[T any](v T) *T { return &v }

func TestProjectLimitSettings(t *testing.T) {
	capacity := Capacity{CPUs: 4, MemoryBytes: 8 << 30}
	for _, tc := range []struct {
		sandbox  string
		want     Limits
		errField string
	}{
		{`{}`, DefaultLimits, ""},
		{`{"memory": "4g", "cpus": 1.5, "processes": 2048, "shmSize": "512m"}`, Limits{4 << 30, 1.5e9, 2048, 512 << 20}, ""},
		{`{"memory": "1.5GiB"}`, Limits{3 << 29, 2e9, 1024, 1 << 30}, ""},
		{`{"memory": "768m", "shmSize": "256MB"}`, Limits{768 << 20, 2e9, 1024, 256 << 20}, ""},
		{`{"memory": "100m"}`, Limits{}, "sandbox.memory"},
		{`{"memory": "lots"}`, Limits{}, "sandbox.memory"},
		{`{"memory": 4096}`, Limits{}, "sandbox.memory"},
		{`{"memory": "16g"}`, Limits{}, "sandbox.memory"},   // more than the engine has
		{`{"memory": "768m"}`, Limits{}, "sandbox.shmSize"}, // the default 1g /dev/shm no longer fits
		{`{"cpus": 0.1}`, Limits{}, "sandbox.cpus"},
		{`{"cpus": 6}`, Limits{}, "sandbox.cpus"},
		{`{"cpus": "2"}`, Limits{}, "sandbox.cpus"},
		{`{"processes": 10}`, Limits{}, "sandbox.processes"},
		{`{"processes": 100000}`, Limits{}, "sandbox.processes"},
		{`{"processes": 1.5}`, Limits{}, "sandbox.processes"},
		{`{"shmSize": "1m"}`, Limits{}, "sandbox.shmSize"},
		{`{"shmSize": "3g"}`, Limits{}, "sandbox.shmSize"}, // more than the memory
		{`{"cpu": 2}`, Limits{}, "sandbox"},
	} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
		os.WriteFile(projectfs.SettingsFile(dir), []byte(`{"sandbox": `+tc.sandbox+`}`), 0o644)
		pc, err := projectfs.ReadConfig(dir)
		var got Limits
		if err == nil {
			got, err = limitsFor(pc, DefaultLimits, capacity, projectfs.SettingsFile(dir))
		}
		var ce *projectfs.ConfigError
		switch {
		case tc.errField != "":
			if !errors.As(err, &ce) || ce.Field != tc.errField || !strings.Contains(err.Error(), "settings.json: "+tc.errField) {
				t.Errorf("%s: err = %v, want one naming %s", tc.sandbox, err, tc.errField)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.sandbox, err)
		case got != tc.want:
			t.Errorf("%s: limits %+v, want %+v", tc.sandbox, got, tc.want)
		}
	}
}

// An engine with fewer CPUs than the default gets a sandbox with all of
// them, rather than a refusal (Docker refuses more CPUs than it has).
func TestDefaultCPUsFitTheEngine(t *testing.T) {
	got, err := limitsFor(projectfs.Config{}, DefaultLimits, Capacity{CPUs: 1, MemoryBytes: 1 << 30}, "settings.json")
	if err != nil || got.NanoCPUs != 1e9 || got.MemoryBytes != DefaultLimits.MemoryBytes {
		t.Errorf("limits %+v, %v", got, err)
	}
}

func TestLimitsApplyAtEveryStart(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	writeSettings(t, dir, `{"sandbox": {"memory": "4g", "processes": 300, "display": {"width": 1024, "height": 768}}}`)
	st, err := h.m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := h.docker.InspectContainer(ctx, st.ContainerID)
	if want := (Limits{4 << 30, 2e9, 300, 1 << 30}); c.Limits != want {
		t.Errorf("created with %+v, want %+v", c.Limits, want)
	}
	if _, err := h.m.Stop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	writeSettings(t, dir, `{"sandbox": {"memory": "3g", "cpus": 1, "shmSize": "2g", "display": {"width": 1920, "height": 1080}}}`)
	h.drain()
	if _, err := h.m.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	c, _ = h.docker.InspectContainer(ctx, st.ContainerID)
	if want := (Limits{3 << 30, 1e9, 1024, 1 << 30}); c.Limits != want {
		t.Errorf("restarted with %+v, want %+v (shm kept)", c.Limits, want)
	}
	var messages []string
	for _, ev := range h.drain() {
		if ev.Kind == EventProgress {
			messages = append(messages, ev.Progress.Message)
		}
	}
	all := strings.Join(messages, "\n")
	for _, want := range []string{"Applied the project's limits: memory 3GiB, CPUs 1, processes 1024",
		"display size in settings.json (1920x1080) applies to a new sandbox: this one keeps 1024x768",
		"shmSize in settings.json (2g) applies to a new sandbox: this one keeps 1GiB"} {
		if !strings.Contains(all, want) {
			t.Errorf("progress does not say %q:\n%s", want, all)
		}
	}
	// Unchanged settings: no update at the next start.
	h.m.Stop(ctx, dir)
	before := h.docker.count("UpdateLimits")
	h.m.Start(ctx, dir)
	if n := h.docker.count("UpdateLimits"); n != before {
		t.Errorf("limits updated again though unchanged (%d calls)", n-before)
	}
	// A wrong setting fails the start and names the field; a settings file
	// that cannot be read leaves the limits as they are.
	h.m.Stop(ctx, dir)
	writeSettings(t, dir, `{"sandbox": {"processes": 5}}`)
	var ce *projectfs.ConfigError
	if _, err := h.m.Start(ctx, dir); !errors.As(err, &ce) || ce.Field != "sandbox.processes" {
		t.Errorf("start with a bad setting: %v", err)
	}
	writeSettings(t, dir, `{"sandbox": `)
	if st, err := h.m.Start(ctx, dir); err != nil || st.Status != StatusRunning {
		t.Errorf("start with a corrupt settings file: %v", err)
	}
}

// A new sandbox is not made from settings that cannot be read: its display
// and /dev/shm would be fixed for good on a guess.
func TestNoSandboxIsMadeFromAnUnreadableSettingsFile(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	writeSettings(t, dir, `{"sandbox": {"memory": "4g"`)
	_, err := h.m.Start(context.Background(), dir)
	var fe *projectfs.FileError
	if !errors.As(err, &fe) || fe.Problem != projectfs.FileCorrupt || !errors.Is(err, ErrProjectFile) || !strings.Contains(err.Error(), "fix it") {
		t.Errorf("start: %v, want a corrupt projectfs.FileError", err)
	}
	if n := h.docker.count("CreateContainer"); n != 0 {
		t.Errorf("%d containers created", n)
	}
	if data, _ := os.ReadFile(projectfs.SettingsFile(dir)); string(data) != `{"sandbox": {"memory": "4g"` {
		t.Errorf("the settings file changed: %q", data)
	}
}

func writeSettings(t *testing.T, dir, content string) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	if err := os.WriteFile(projectfs.SettingsFile(dir), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
