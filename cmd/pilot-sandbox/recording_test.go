package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestServeRecordings: sandbox/recording/* through the protocol on a real
// sandbox, and config.json's recordTasks recording a task from its start
// to its end: a client-started recording stops with its facts, bad params
// name their field, and a task of about 4 s leaves a recording of about
// its length.
func TestServeRecordings(t *testing.T) {
	project := taskProject(t)
	config := t.TempDir()
	if err := os.MkdirAll(filepath.Join(config, "pilot-sandbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, "pilot-sandbox", "config.json"), []byte(`{"recordTasks": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSidecar(t, "ndjson", ownScope(t), "XDG_CONFIG_HOME="+config)
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))

	for _, c := range []struct {
		method, field string
		params        map[string]any
	}{
		{"sandbox/recording/start", "fps", map[string]any{"projectPath": project, "fps": 60}},
		{"sandbox/recording/stop", "recordingId", map[string]any{"recordingId": "20990101-000000-00000000"}},
		{"sandbox/recording/stop", "recordingId", map[string]any{"recordingId": "../../etc/passwd"}},
	} {
		got := s.call(c.method, c.params, time.Minute)
		e, _ := got["error"].(map[string]any)
		if e == nil || e["code"] != -32602.0 || jsonString(e["data"]) != `{"field":"`+c.field+`","kind":"invalid_params"}` {
			t.Errorf("%s %v: %v; want invalid_params naming %s", c.method, c.params, got, c.field)
		}
	}

	id := result(t, s.call("sandbox/recording/start", map[string]any{"projectPath": project}, 5*time.Minute))["recordingId"].(string)
	time.Sleep(2 * time.Second) // the length recorded
	stopped := result(t, s.call("sandbox/recording/stop", map[string]any{"recordingId": id}, time.Minute))
	if stopped["bytes"].(float64) <= 0 || stopped["durationMs"].(float64) < 1000 || stopped["recording"].(map[string]any)["state"] != "stopped" {
		t.Fatalf("stop: %v", stopped)
	}

	started := result(t, s.call("sandbox/tasks/start", map[string]any{
		"projectPath": project, "agent": "command", "command": []string{"sleep", "4"},
	}, time.Minute))
	taskFinished(t, s, started["taskId"].(string), time.Minute)
	deadline := time.Now().Add(time.Minute)
	for {
		list := result(t, s.call("sandbox/recording/list", map[string]any{"projectPath": project}, time.Minute))["recordings"].([]any)
		newest := list[0].(map[string]any)
		if len(list) == 2 && newest["state"] == "stopped" {
			if ms := newest["durationMs"].(float64); ms < 2500 || ms > 8000 {
				t.Fatalf("the task's recording lasts %v ms; the task about 4000", ms)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stopped recording of the task within a minute: %v", list)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
