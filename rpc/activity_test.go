package rpc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
)

// A window of time picks a recording's entries (its player's marks): the
// entries between from and to, oldest first, the limit counted in the
// window, thumbnails left out when brief; a window that ends before it
// starts is refused naming to.
func TestActivityWindow(t *testing.T) {
	state, project := t.TempDir(), canonical(t.TempDir())
	rec := activity.NewRecorder(state)
	for i := range 10 {
		e := activity.Entry{Time: int64(1000 * (i + 1)), Source: activity.SourceRPC, Kind: "tool",
			Name: "sandbox_click", Summary: "click", Before: []byte{0xff, 0xd8}}
		if _, err := rec.Log().Append(project, e); err != nil {
			t.Fatal(err)
		}
	}
	svc := newFakeService().services()
	svc.Activity = rec
	c, _ := serveServices(t, svc)

	c.send(1, "sandbox/activity", map[string]any{"projectPath": project, "from": 3000, "to": 7000, "limit": 3, "brief": true})
	r := c.reply()
	entries := r["result"].(map[string]any)["entries"].([]any)
	if len(entries) != 3 {
		t.Fatalf("window 3000..7000 limit 3: %d entries: %v", len(entries), r)
	}
	for i, e := range entries {
		e := e.(map[string]any)
		if e["time"] != float64(3000+1000*i) || e["before"] != nil {
			t.Errorf("entry %d: %v; want time %d and no thumbnail", i, e, 3000+1000*i)
		}
	}
	c.send(2, "sandbox/activity", map[string]any{"projectPath": project, "from": 3000})
	if got := len(c.reply()["result"].(map[string]any)["entries"].([]any)); got != 8 {
		t.Errorf("from 3000: %d entries, want 8", got)
	}
	c.send(3, "sandbox/activity", map[string]any{"projectPath": project, "limit": 2})
	if e := c.reply()["result"].(map[string]any)["entries"].([]any); len(e) != 2 || e[1].(map[string]any)["before"] == nil {
		t.Errorf("newest 2 with thumbnails: %v", e)
	}
	c.send(4, "sandbox/activity", map[string]any{"projectPath": project, "from": 5000, "to": 4000})
	r = c.reply()
	if e, ok := r["error"].(map[string]any); !ok || e["data"].(map[string]any)["field"] != "to" {
		t.Errorf("to before from: %v; want an invalid params error naming to", r)
	}
}

// An export with no folder goes into a new one under the state directory;
// one into an existing folder is refused, naming dir.
func TestActivityExport(t *testing.T) {
	state, project := t.TempDir(), canonical(t.TempDir())
	rec := activity.NewRecorder(state)
	if _, err := rec.Log().Append(project, activity.Entry{Source: activity.SourceRPC, Kind: "tool", Name: "sandbox_key", Summary: "ctrl+s"}); err != nil {
		t.Fatal(err)
	}
	svc := newFakeService().services()
	svc.Activity = rec
	c, _ := serveServices(t, svc)

	c.send(1, "sandbox/activity/export", map[string]any{"projectPath": project})
	r := c.reply()
	res, ok := r["result"].(map[string]any)
	if !ok || res["entries"] != float64(1) {
		t.Fatalf("export: %v", r)
	}
	dir := res["dir"].(string)
	if rel, err := filepath.Rel(state, dir); err != nil || strings.HasPrefix(rel, "..") {
		t.Errorf("exported into %s, not under the state directory %s", dir, state)
	}
	if _, err := os.Stat(filepath.Join(dir, "actions.jsonl")); err != nil {
		t.Error(err)
	}
	c.send(2, "sandbox/activity/export", map[string]any{"projectPath": project, "dir": dir})
	r = c.reply()
	if e, ok := r["error"].(map[string]any); !ok || e["data"].(map[string]any)["field"] != "dir" {
		t.Errorf("export into an existing folder: %v; want an invalid params error naming dir", r)
	}
}
