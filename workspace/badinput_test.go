package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// peakHeap samples the heap in use until stop is called, and returns the
// highest it saw above where it started.
func peakHeap() (stop func() uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	start, peak := ms.HeapAlloc, ms.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Ends when stop closes done.
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak - start
	}
}

// progressLog keeps a sync's progress reports.
type progressLog struct {
	mu   sync.Mutex
	seen []workspace.Progress
}

func (p *progressLog) report(pr workspace.Progress) {
	p.mu.Lock()
	p.seen = append(p.seen, pr)
	p.mu.Unlock()
}

// TestSyncA2GBFile: a sparse 2 GB file on the host is 2 GB of real bytes
// in the sandbox, streamed in bounded memory, with progress as it goes.
func TestSyncA2GBFile(t *testing.T) {
	s := newSandbox(t)
	const size = 2 << 30
	big := filepath.Join(s.Project, "big.bin")
	if err := os.Truncate(createEmpty(t, big), size); err != nil {
		t.Fatal(err)
	}
	write(t, s.Project, "small.txt", "hello\n")
	var prog progressLog
	stop := peakHeap()
	res, err := s.workspace().Sync(context.Background(), prog.report)
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 || res.SentBytes != size+6 {
		t.Errorf("synced %+v", res)
	}
	if peak > 64<<20 {
		t.Errorf("the heap grew by %d MiB while 2 GB crossed", peak>>20)
	}
	if len(prog.seen) < 3 || prog.seen[len(prog.seen)-1].Bytes != size+6 {
		t.Errorf("progress %+v", prog.seen)
	}
	got := strings.Fields(s.sh("stat -c %s /workspace/big.bin && du -k /workspace/big.bin"))
	if allocated, _ := strconv.Atoi(got[1]); got[0] != strconv.Itoa(size) || allocated < size>>10 {
		t.Errorf("in the sandbox: %q; want 2 GiB of real bytes", got)
	}
	t.Logf("2 GiB synced; the heap grew by at most %d MiB; %d progress reports", peak>>20, len(prog.seen))
}

func createEmpty(t *testing.T, file string) string {
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return file
}

// TestSync100000Files: a project of 100,000 files crosses in bounded
// memory (the manifest's entries, never the files), with progress; a
// second sync sends nothing.
func TestSync100000Files(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 100,000 files")
	}
	s := newSandbox(t)
	manyFiles(t, s.Project, 100000)
	var prog progressLog
	stop := peakHeap()
	res, err := s.workspace().Sync(context.Background(), prog.report)
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 100000 || res.Sent != 100000 {
		t.Errorf("synced %+v", res)
	}
	if peak > 256<<20 {
		t.Errorf("the heap grew by %d MiB for 100,000 files", peak>>20)
	}
	if len(prog.seen) < 2 || prog.seen[len(prog.seen)-1].Files != 100000 {
		t.Errorf("%d progress reports, the last %+v", len(prog.seen), prog.seen[len(prog.seen)-1])
	}
	if got := strings.TrimSpace(s.sh("cd /workspace && git ls-files | wc -l")); got != "100000" {
		t.Errorf("the workspace's base has %s files", got)
	}
	again, err := s.workspace().Sync(context.Background(), nil)
	if err != nil || again.Sent != 0 || again.Changed {
		t.Errorf("a second sync: %+v %v", again, err)
	}
	t.Logf("100,000 files synced; the heap grew by at most %d MiB; %d progress reports", peak>>20, len(prog.seen))
}
