package activity

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const project = "/home/u/project"

// Two sidecars on one project append at once: every seq is given once,
// and the file holds them in order.
func TestTwoProcessesAppendInOrder(t *testing.T) {
	dir := t.TempDir()
	logs := []*Log{NewLog(dir), NewLog(dir)}
	var wg sync.WaitGroup
	for i, l := range logs {
		wg.Go(func() {
			for j := range 200 {
				if _, err := l.Append(project, Entry{Kind: KindTool, Name: fmt.Sprintf("w%d-%d", i, j)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err := logs[0].Read(project, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 400 {
		t.Fatalf("%d entries, want 400", len(got))
	}
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
	since, _ := logs[1].Read(project, 395, 3)
	if len(since) != 3 || since[0].Seq != 396 {
		t.Fatalf("since 395, limit 3: %+v", since)
	}
	newest, _ := logs[1].Read(project, 0, 2)
	if len(newest) != 2 || newest[1].Seq != 400 {
		t.Fatalf("newest 2: %+v", newest)
	}
}

// A flood of 10,000 tool calls with thumbnails leaves the timeline within
// its bound and the heap flat.
func TestFloodStaysBounded(t *testing.T) {
	dir := t.TempDir()
	r := NewRecorder(dir)
	thumb := bytes.Repeat([]byte{0xff}, 20<<10)
	flood := func(n int) {
		for range n {
			e := Entry{Kind: KindTool, Name: "sandbox_click", Summary: strings.Repeat("x", 5000), Before: thumb, After: thumb}
			if err := r.Add(context.Background(), project, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	flood(1000)
	before := heap()
	flood(9000)
	after := heap()
	total := size(t, r.log.current(project)) + size(t, r.log.previous(project))
	t.Logf("timeline %d bytes after 10,000 entries; heap %d -> %d bytes", total, before, after)
	if total > 2*FileBytes+maxEntryBytes {
		t.Fatalf("timeline is %d bytes, over its bound %d", total, 2*FileBytes+maxEntryBytes)
	}
	if after > before+8<<20 {
		t.Fatalf("heap grew from %d to %d bytes", before, after)
	}
	got, _ := r.log.Read(project, 0, 1)
	if got[0].Seq != 10000 || len(got[0].Summary) > maxSummary {
		t.Fatalf("last entry: seq %d, summary %d bytes", got[0].Seq, len(got[0].Summary))
	}
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func size(t *testing.T, path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// A corrupt timeline file is set aside, and the timeline goes on.
func TestCorruptFileIsSetAside(t *testing.T) {
	dir := t.TempDir()
	l := NewLog(dir)
	if _, err := l.Append(project, Entry{Kind: KindTool, Name: "one"}); err != nil {
		t.Fatal(err)
	}
	path := l.current(project)
	if err := os.WriteFile(path, []byte("not json\n{\"seq\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := l.Read(project, 0, 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("read of a corrupt file: %v, %+v", err, got)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("set aside: %v", aside)
	}
	e, err := l.Append(project, Entry{Kind: KindTool, Name: "two"})
	if err != nil || e.Seq != 2 {
		t.Fatalf("append after: seq %d, %v", e.Seq, err)
	}
	if got, _ := l.Read(project, 0, 0); len(got) != 1 || got[0].Name != "two" {
		t.Fatalf("after: %+v", got)
	}
}

// A line cut short by a process killed mid-write is left out; the next
// append goes on.
func TestTornLastLineIsLeftOut(t *testing.T) {
	l := NewLog(t.TempDir())
	l.Append(project, Entry{Kind: KindTool, Name: "one"})
	f, _ := os.OpenFile(l.current(project), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":2,"na`)
	f.Close()
	got, err := l.Read(project, 0, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("%v, %+v", err, got)
	}
}

// Each recorder tells its listeners the entries another process appended,
// in order, and its own.
func TestFollowHearsTheOtherProcess(t *testing.T) {
	dir := t.TempDir()
	app, mcp := NewRecorder(dir), NewRecorder(dir)
	mcp.Add(context.Background(), project, Entry{Kind: KindTool, Name: "before"}) // history, not news
	heard := make(chan Entry, 100)
	defer app.Listen(func(e Entry) { heard <- e })()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := app.startFollower()
	go app.follow(ctx, f)
	mcpCtx := WithOrigin(context.Background(), Origin{Source: SourceMCP, Client: "claude-code"})
	mcp.Add(mcpCtx, project, Entry{Kind: KindTool, Name: "sandbox_click"})
	app.Add(context.Background(), project, Entry{Kind: KindExec, Name: "ls"})
	want := []string{"sandbox_click", "ls"}
	for i, name := range want {
		select {
		case e := <-heard:
			if e.Name != name || e.Seq != int64(i+2) {
				t.Fatalf("heard %q seq %d, want %q seq %d", e.Name, e.Seq, name, i+2)
			}
			if i == 0 && (e.Source != SourceMCP || e.Client != "claude-code" || e.ProjectPath != project) {
				t.Fatalf("origin: %+v", e)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("did not hear %q", name)
		}
	}
}

func TestThumbnailIsASmallJPEG(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 1280, 800))
	for x := range 1280 {
		src.Set(x, 400, color.White)
	}
	var p bytes.Buffer
	png.Encode(&p, src)
	out, err := Thumbnail(p.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != ThumbnailWidth || b.Dy() != 200 || len(out) > maxThumbnail {
		t.Fatalf("%v, %d bytes", b, len(out))
	}
}

// AppendOnce appends what its once names a single time, however many
// appenders race to (two sidecars seeing one death), and again once
// something else was recorded under another once; an empty once always
// appends.
func TestAppendOnce(t *testing.T) {
	l := NewLog(t.TempDir())
	var wg sync.WaitGroup
	var added sync.Map
	for i := range 8 {
		wg.Go(func() {
			if _, ok, err := l.AppendOnce(project, "c1@100 error", Entry{Kind: KindLifecycle, Name: "error"}); err != nil || ok {
				added.Store(i, err)
			}
		})
	}
	wg.Wait()
	n := 0
	added.Range(func(any, any) bool { n++; return true })
	for _, step := range []struct {
		once string
		want bool
	}{{"c1@100 error", false}, {"c1@200 error", true}, {"c1@100 error", true}, {"", true}, {"", true}} {
		if _, ok, err := l.AppendOnce(project, step.once, Entry{Kind: KindLifecycle, Name: "x"}); ok != step.want || err != nil {
			t.Errorf("AppendOnce(%q): %v, %v; want %v", step.once, ok, err, step.want)
		}
	}
	entries, err := l.Read(project, 0, 0)
	if n != 1 || err != nil || len(entries) != 5 {
		t.Errorf("%d of 8 racing appends appended; %d entries, %v", n, len(entries), err)
	}
}
