package mcpserver

import (
	"context"
	"os"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// rereadEvery: every this many polls the switch is read even though the
// file looks the same (an edit in place within the file system's time
// granularity, keeping the size).
const rereadEvery = 20

// watch follows the settings file, where any process flips the switch (the
// app, the panel, another pilot-sandbox, a person's editor), until ctx
// ends.
//
// It polls: one stat per Poll, and a read only when the file changed (its
// identity, size or time) or every rereadEvery polls. That costs next to
// nothing, works wherever the project lives (network file systems
// included), and needs no watch on a directory that may not exist yet:
// .pilot/ is made by the first write, and the app replaces settings.json
// with a rename. fsnotify would need both handled, and a dependency.
func (s *Server) watch(ctx context.Context) {
	path := projectfs.SettingsFile(s.opts.Project)
	last, _ := os.Stat(path)
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, _ := os.Stat(path)
		if changed(last, now) || n%rereadEvery == 0 {
			last = now
			s.sync()
		}
	}
}

// changed says whether a file's stat differs: made, removed, replaced, or
// written.
func changed(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return (a == nil) != (b == nil)
	}
	return !os.SameFile(a, b) || a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime())
}
