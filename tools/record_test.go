package tools_test

import (
	"bytes"
	"context"
	"image/jpeg"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// A scripted session on the real engine (a click, typing, a key, an exec,
// and a user's answer recorded by another sidecar of the user) appears on
// the timeline in order, with thumbnails of the acting tools that decode.
func TestSessionIsOnTheTimeline(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	state := t.TempDir()
	rec, other := activity.NewRecorder(state), activity.NewRecorder(state)
	d := &desk{t: t, m: m, set: tools.New(m, tools.Record(rec)), project: dir}
	t.Cleanup(d.set.Close)
	d.must("sandbox_start", `{}`)
	d.must("sandbox_click", `{"x": 100, "y": 100}`)
	d.must("sandbox_type", `{"text": "hello"}`)
	d.must("sandbox_key", `{"keys": "Return"}`)
	d.must("sandbox_exec", `{"command": "echo hi"}`)
	user := activity.WithOrigin(context.Background(), activity.Origin{Source: activity.SourceUser})
	if err := other.Add(user, dir, activity.Entry{Kind: activity.KindPermission, Name: "allow_once"}); err != nil {
		t.Fatal(err)
	}
	entries, err := rec.Log().Read(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ kind, name, source string }{
		{"tool", "sandbox_start", "rpc"}, {"tool", "sandbox_click", "rpc"}, {"tool", "sandbox_type", "rpc"},
		{"tool", "sandbox_key", "rpc"}, {"exec", "sandbox_exec", "rpc"}, {"permission", "allow_once", "user"},
	}
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(entries), len(want), entries)
	}
	for i, w := range want {
		e := entries[i]
		if e.Seq != int64(i+1) || e.Kind != w.kind || e.Name != w.name || e.Source != w.source || e.ProjectPath != dir {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
		acting := i >= 1 && i <= 3
		if acting != (e.Before != nil && e.After != nil) {
			t.Errorf("%s: thumbnails %d and %d bytes", e.Name, len(e.Before), len(e.After))
		}
		for _, thumb := range [][]byte{e.Before, e.After} {
			if thumb == nil {
				continue
			}
			img, err := jpeg.Decode(bytes.NewReader(thumb))
			if err != nil || img.Bounds().Dx() != activity.ThumbnailWidth {
				t.Errorf("%s: thumbnail %v, %v", e.Name, err, img)
			}
		}
	}
	t.Logf("thumbnails of a click: %d and %d bytes; summary %q", len(entries[1].Before), len(entries[1].After), entries[4].Summary)
}
