package projectfs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

func TestNetLogIsKeptPerProjectAndRotated(t *testing.T) {
	state := t.TempDir()
	l := projectfs.NewNetLog(state)
	a, b := "/home/me/a", "/home/me/b"
	entry := func(i int) projectfs.NetLogEntry {
		return projectfs.NetLogEntry{Time: int64(i), Host: fmt.Sprintf("h%d.example", i), Port: 443, Protocol: "tcp",
			Decision: "allow", By: "preset", BytesIn: 10, BytesOut: 20, Cause: json.RawMessage(`{"tool":"sandbox_exec"}`)}
	}
	if err := l.Append(a, []projectfs.NetLogEntry{entry(1), entry(2)}); err != nil {
		t.Fatal(err)
	}
	l.Append(b, []projectfs.NetLogEntry{entry(3)})
	got, err := l.Tail(a, 0)
	if err != nil || len(got) != 2 || got[0].Host != "h1.example" || string(got[1].Cause) != `{"tool":"sandbox_exec"}` {
		t.Fatalf("tail = %+v, %v", got, err)
	}
	if got, _ := l.Tail(a, 1); len(got) != 1 || got[0].Time != 2 {
		t.Errorf("tail 1 = %+v", got)
	}
	// Many more than a file holds: the log keeps its last two files.
	for i := 0; i < 20000; i += 100 {
		batch := make([]projectfs.NetLogEntry, 100)
		for j := range batch {
			batch[j] = entry(i + j)
		}
		if err := l.Append(a, batch); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(state, "netlog", "*.jsonl"))
	var total int64
	for _, f := range files {
		info, _ := os.Stat(f)
		total += info.Size()
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", f, info.Mode())
		}
	}
	if len(files) != 3 || total > 2*projectfs.NetLogFileBytes+(1<<10) {
		t.Errorf("%d files, %d bytes: want a's two and b's one, within %d", len(files), total, 2*projectfs.NetLogFileBytes)
	}
	got, _ = l.Tail(a, 0)
	if last := got[len(got)-1]; last.Time != 19999 || len(got) < 2000 {
		t.Errorf("%d entries kept, the last %+v", len(got), last)
	}
	if got, _ := l.Tail(b, 0); len(got) != 1 {
		t.Errorf("b: %+v", got)
	}
}

func TestNetLogBoundsAnEntryAndSkipsBrokenLines(t *testing.T) {
	state := t.TempDir()
	l := projectfs.NewNetLog(state)
	huge := projectfs.NetLogEntry{Host: "x.example", Reason: strings.Repeat("r", 10000),
		Process: json.RawMessage(`{"pid": 1, "command": "` + strings.Repeat("c", 10000) + `"}`)}
	l.Append("/p", []projectfs.NetLogEntry{huge})
	files, _ := filepath.Glob(filepath.Join(state, "netlog", "*.jsonl"))
	f, _ := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time": 5, "host": "cut`)
	f.Close()
	l.Append("/p", []projectfs.NetLogEntry{{Host: "after.example"}})
	got, err := l.Tail("/p", 0)
	if err != nil || len(got) != 2 || got[0].Host != "x.example" || len(got[0].Reason) > 300 || got[0].Process != nil || got[1].Host != "after.example" {
		t.Fatalf("tail = %d entries, %v", len(got), err)
	}
}
