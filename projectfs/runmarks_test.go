package projectfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRunMarks(t *testing.T) {
	state := t.TempDir()
	r := NewRunMarks(state, MarkReady)
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	started := time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	if r.Known(id, started) {
		t.Fatal("known before it was marked")
	}
	if err := r.Mark(id, started); err != nil {
		t.Fatal(err)
	}
	if !r.Known(id, started.UTC()) {
		t.Error("a marked run is not known")
	}
	if r.Known(id, started.Add(time.Nanosecond)) {
		t.Error("a later run of the same container is known")
	}
	if !NewRunMarks(state, MarkReady).Known(id, started) {
		t.Error("another process of the same state does not know it")
	}
	if NewRunMarks(t.TempDir(), MarkReady).Known(id, started) {
		t.Error("a process of another state knows it")
	}
	if NewRunMarks(state, MarkEgress).Known(id, started) {
		t.Error("a mark of one kind is one of another")
	}
	r.Forget(id)
	if r.Known(id, started) {
		t.Error("known after Forget")
	}
}

// What is not a container's ID names no file, and what is in a record
// other than a start time is no record.
func TestRunMarksRefuseWhatIsNotTheirs(t *testing.T) {
	state := t.TempDir()
	r := NewRunMarks(state, MarkReady)
	now := time.Now()
	for _, id := range []string{"../../registry.json", "", "ABCDEF0123456789", "abc"} {
		if err := r.Mark(id, now); err != nil || r.Known(id, now) {
			t.Errorf("%q: marked (%v)", id, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(state, "ready")); len(entries) != 0 {
		t.Errorf("files made for IDs that are not: %v", entries)
	}
	id := "0123456789ab"
	if err := os.MkdirAll(filepath.Join(state, "ready"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, junk := range []string{"", "yesterday", now.Format(time.RFC3339Nano) + "\x00"} {
		if err := os.WriteFile(filepath.Join(state, "ready", id), []byte(junk), 0o600); err != nil {
			t.Fatal(err)
		}
		if r.Known(id, now) {
			t.Errorf("a record of %q is known", junk)
		}
	}
	if NewRunMarks("", MarkReady).Mark(id, now) != nil || NewRunMarks("", MarkReady).Known(id, now) {
		t.Error("no state directory keeps a record")
	}
}

// Marking removes the records not written for a month.
func TestRunMarksForgetOldRecords(t *testing.T) {
	state := t.TempDir()
	r := NewRunMarks(state, MarkReady)
	old, fresh := "0123456789ab", "ba9876543210"
	now := time.Now()
	if err := r.Mark(old, now); err != nil {
		t.Fatal(err)
	}
	month := now.Add(-31 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(state, "ready", old), month, month); err != nil {
		t.Fatal(err)
	}
	if err := r.Mark(fresh, now); err != nil {
		t.Fatal(err)
	}
	if r.Known(old, now) || !r.Known(fresh, now) {
		t.Errorf("after a mark: old known %v, fresh known %v", r.Known(old, now), r.Known(fresh, now))
	}
}
