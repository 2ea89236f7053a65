package sandboxfs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// TestWritesDoNotFollowTheSandboxsLinksOut plants links to directories of
// root's (/usr/local/bin, the VNC passwords' /etc/pilot-sandbox/vnc) where
// the user writes, and a link that comes and goes under a running upload:
// the engine's archive API writes as root, so neither an upload, a write
// nor a mkdir may land there, running or stopped, and a removal through
// the link removes nothing. A link to the sandbox's own directory is
// followed while it runs.
func TestWritesDoNotFollowTheSandboxsLinksOut(t *testing.T) {
	s := newSandbox(t)
	ctx := context.Background()
	s.sh("ln -s /usr/local/bin out && ln -s /etc/pilot-sandbox/vnc vnc && mkdir mine.d && ln -s mine.d mine")
	host := t.TempDir()
	evil := filepath.Join(host, "evil")
	os.WriteFile(evil, []byte("#!/bin/sh\necho planted\n"), 0o755)
	tree := filepath.Join(host, "tree")
	os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
	os.WriteFile(filepath.Join(tree, "sub", "f"), []byte("x"), 0o644)

	attempts := func(files *sandboxfs.FS) {
		t.Helper()
		for _, dir := range []string{"out", "vnc"} {
			if _, err := files.Upload(ctx, evil, dir+"/evil"); err == nil {
				t.Errorf("an upload to %s/evil was let through", dir)
			}
			if _, err := files.Upload(ctx, tree, dir+"/tree"); err == nil {
				t.Errorf("an upload of a tree to %s/tree was let through", dir)
			}
			if _, err := files.Write(ctx, sandboxfs.WriteRequest{Path: dir + "/written", Data: []byte("x")}); err == nil {
				t.Errorf("a write to %s/written was let through", dir)
			}
			if _, err := files.Mkdir(ctx, dir+"/made"); err == nil {
				t.Errorf("a mkdir of %s/made was let through", dir)
			}
		}
		if _, err := files.Write(ctx, sandboxfs.WriteRequest{Path: "vnc/passwd", Data: []byte("none\n")}); err == nil {
			t.Error("a write over the VNC passwords through a link was let through")
		}
	}
	planted := func(when string) {
		t.Helper()
		files := s.files()
		for _, p := range []string{"/usr/local/bin/evil", "/usr/local/bin/tree", "/usr/local/bin/written", "/usr/local/bin/made",
			"/etc/pilot-sandbox/vnc/evil", "/etc/pilot-sandbox/vnc/tree", "/etc/pilot-sandbox/vnc/written", "/etc/pilot-sandbox/vnc/made"} {
			if st, err := files.Stat(ctx, p); err != nil || st != nil {
				t.Errorf("%s: %s is there (%+v, %v)", when, p, st, err)
			}
		}
		r, err := files.Read(ctx, "/etc/pilot-sandbox/vnc/passwd", 0, 0)
		if err != nil || strings.HasPrefix(string(r.Data), "none") {
			t.Errorf("%s: the VNC passwords were replaced (%q, %v)", when, r.Data, err)
		}
	}

	running := s.files()
	attempts(running)
	if _, err := running.Remove(ctx, "out/pilot-desktop", false); err == nil {
		t.Error("a removal through a link to /usr/local/bin was let through")
	}
	if _, err := running.Write(ctx, sandboxfs.WriteRequest{Path: "mine/f", Data: []byte("mine")}); err != nil {
		t.Errorf("a write through a link to the sandbox's own directory: %v", err)
	} else if got := s.sh("cat mine.d/f; stat -c ' %U' mine.d/f"); got != "mine sandbox\n" {
		t.Errorf("the write through the sandbox's own link made %q", got)
	}
	planted("running")

	// A link that takes the place of a directory, and gives it back, in a
	// loop while the uploads run: a check of the path before the upload
	// cannot see what the engine will find.
	s.sh("(while :; do mkdir race 2>/dev/null; rm -rf race; ln -s /usr/local/bin race 2>/dev/null; rm -f race; done) >/dev/null 2>&1 & echo $! > swapper.pid")
	for range 40 {
		running.Upload(ctx, evil, "race/evil")
	}
	s.sh("kill $(cat swapper.pid)")
	if st, _ := running.Stat(ctx, "/usr/local/bin/evil"); st != nil {
		t.Error("an upload to a path whose directory came and went as a link landed in /usr/local/bin")
	}

	if _, err := s.m.Stop(ctx, s.project); err != nil {
		t.Fatal(err)
	}
	attempts(s.files())
	planted("stopped")
}
