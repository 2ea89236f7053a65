package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// manyFiles fills dir with n small source-like files (about 1 KiB each)
// in directories of 100.
func manyFiles(tb testing.TB, dir string, n int) {
	tb.Helper()
	body := make([]byte, 1000)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		body[0] = byte(i)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d.txt", i)), body, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSyncFirst10000 is the first sync of a project of 10,000 files
// of 1 KiB (outside a git repository) into a fresh workspace: each round
// a manifest of its own, so all of it crosses and is committed. The last
// round's workspace is moved aside, not removed: removing 10,000 files
// here (ext4 mounted with discard) slows the next 10,000 creations
// several times over (tar -x of them: 0.2 s on a fresh directory, 6 to
// 8 s right after an rm -rf).
func BenchmarkSyncFirst10000(b *testing.B) {
	s := newSandbox(b)
	manyFiles(b, s.Project, 10000)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		s.sh("if [ -d /workspace/.git ]; then d=$(mktemp -d) && mv /workspace/.git /workspace/d* $d/; fi")
		s.stateDir = b.TempDir()
		b.StartTimer()
		res, err := s.workspace().Sync(ctx, nil)
		if err != nil || res.Sent != 10000 {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkSyncUnchanged10000 is a sync of the same project with nothing
// changed.
func BenchmarkSyncUnchanged10000(b *testing.B) {
	s := newSandbox(b)
	manyFiles(b, s.Project, 10000)
	ctx := context.Background()
	ws := s.workspace()
	if _, err := ws.Sync(ctx, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := ws.Sync(ctx, nil)
		if err != nil || res.Sent != 0 {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkApply1000 is the apply of a task's change to 1,000 files of
// 1 KiB (each modified in the sandbox): read the change, compare each host
// file with its base, fetch the 1,000 contents, write and rename them. The
// host's files are put back between rounds.
func BenchmarkApply1000(b *testing.B) {
	s := newSandbox(b)
	manyFiles(b, s.Project, 1000)
	ctx := context.Background()
	ws := s.workspace()
	res, err := ws.Sync(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	s.sh("cd /workspace && for f in d*/f*.txt; do echo changed >> $f; done")
	commit, err := ws.SaveTask(ctx, "bench", res.Base)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		manyFiles(b, s.Project, 1000)
		b.StartTimer()
		applied, err := ws.Apply(ctx, res.Base, commit, nil)
		if err != nil || len(applied) != 1000 {
			b.Fatal(len(applied), err)
		}
	}
}
