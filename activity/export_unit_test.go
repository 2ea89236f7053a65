package activity

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// An export writes the window's entries oldest first with their
// thumbnails as files named in actions.jsonl, copies the recordings it is
// given, and goes only into a new folder: an existing one (the user's) is
// refused with nothing written into it.
func TestExportIsANewFolderOfTheWindow(t *testing.T) {
	l := NewLog(t.TempDir())
	for i := range 6 {
		e := Entry{Time: int64(1000 * (i + 1)), Kind: KindTool, Name: "sandbox_click", Summary: "click"}
		if i%2 == 0 {
			e.Before, e.After = []byte{0xff, 0xd8, byte(i)}, []byte{0xff, 0xd8, byte(i + 100)}
		}
		if _, err := l.Append("/p", e); err != nil {
			t.Fatal(err)
		}
	}
	video := filepath.Join(t.TempDir(), "rec1.webm")
	os.WriteFile(video, []byte("webm bytes"), 0o600)
	dir := filepath.Join(t.TempDir(), "session")

	got, err := l.Export("/p", dir, Window{From: 2000, To: 5000}, []string{video})
	if err != nil {
		t.Fatal(err)
	}
	if got.Entries != 4 || got.Screens != 4 || len(got.Recordings) != 1 {
		t.Fatalf("exported %+v; want 4 entries (2000..5000), 4 screens, 1 recording", got)
	}
	f, _ := os.Open(filepath.Join(dir, "actions.jsonl"))
	defer f.Close()
	var times []int64
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var e map[string]any
		json.Unmarshal(sc.Bytes(), &e)
		times = append(times, int64(e["time"].(float64)))
		if e["before"] != nil {
			t.Errorf("entry %v inlines its thumbnail", e["seq"])
		}
		if name, ok := e["beforeFile"].(string); ok {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || len(data) != 3 || data[0] != 0xff {
				t.Errorf("%s: %v %v", name, data, err)
			}
		}
	}
	if len(times) != 4 || times[0] != 2000 || times[3] != 5000 {
		t.Errorf("times %v; want 2000..5000 oldest first", times)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, got.Recordings[0])); string(data) != "webm bytes" {
		t.Errorf("recording copied as %q", data)
	}

	mine := t.TempDir()
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("mine"), 0o600)
	_, err = l.Export("/p", mine, Window{}, nil)
	var ee *ExportError
	if !errors.As(err, &ee) {
		t.Fatalf("export into an existing folder: %v; want an ExportError", err)
	}
	if names, _ := os.ReadDir(mine); len(names) != 1 {
		t.Errorf("the existing folder now holds %d files", len(names))
	}
	if _, err := l.Export("/p", "relative/dir", Window{}, nil); !errors.As(err, &ee) {
		t.Errorf("a relative folder: %v; want an ExportError", err)
	}
}
