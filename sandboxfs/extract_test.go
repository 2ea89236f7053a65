package sandboxfs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ent is one entry of a crafted archive.
type ent struct {
	name, link, body string
	typ              byte
	mode             int64
}

func dirE(name string) ent        { return ent{name: name, typ: tar.TypeDir, mode: 0o755} }
func fileE(name, body string) ent { return ent{name: name, body: body, typ: tar.TypeReg, mode: 0o644} }
func linkE(name, target string) ent {
	return ent{name: name, link: target, typ: tar.TypeSymlink, mode: 0o777}
}
func hardE(name, target string) ent {
	return ent{name: name, link: target, typ: tar.TypeLink, mode: 0o644}
}

func archive(t *testing.T, entries ...ent) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body)), ModTime: time.Unix(1700000000, 0)}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// listTree lists everything under dir with its type, for before/after
// comparisons.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel+" "+d.Type().String())
		return nil
	})
	return out
}

func runExtract(t *testing.T, buf *bytes.Buffer, hostPath string, overwrite bool) (Copied, error) {
	t.Helper()
	return extract(context.Background(), buf, hostPath, overwrite, newReporter(nil, 0))
}

// TestExtractRefusesHostileArchives feeds archives a hostile sandbox could
// send and checks that each is refused naming path, and that nothing
// changed on the host: not hostPath, not its directory, not what a link
// pointed at.
func TestExtractRefusesHostileArchives(t *testing.T) {
	long := strings.Repeat("a", maxNameBytes+1)
	cases := []struct {
		name    string
		entries []ent
		want    string
	}{
		{"dot-dot name", []ent{dirE("site/"), fileE("site/../../evil", "x")}, "goes up with .."},
		{"dot-dot hidden in the middle", []ent{dirE("site/"), fileE("site/a/../../evil", "x")}, "goes up with .."},
		{"absolute name", []ent{dirE("site/"), fileE("/tmp/evil", "x")}, "absolute name"},
		{"outside the root", []ent{dirE("site/"), fileE("other/evil", "x")}, "not under the archive's root"},
		{"absolute link", []ent{dirE("site/"), linkE("site/etc", "/etc")}, "absolute path"},
		{"link up and out", []ent{dirE("site/"), dirE("site/a/"), linkE("site/a/l", "../../outside")}, "leads out of hostPath"},
		{"link out through another link", []ent{dirE("site/"), dirE("site/a/"), dirE("site/a/b/"),
			linkE("site/a/b/up", "../.."), linkE("site/a/b/m", "up/..")}, "leads out of hostPath"},
		{"link out through a later link", []ent{dirE("site/"), linkE("site/m", "later/../.."), dirE("site/d/"), linkE("site/later", "d")}, "leads out of hostPath"},
		{"link loop", []ent{dirE("site/"), linkE("site/a", "b"), linkE("site/b", "a")}, "leads out of hostPath"},
		{"write through a link", []ent{dirE("site/"), dirE("site/real/"), linkE("site/l", "real"), fileE("site/l/f", "x")}, "not inside a directory of the archive"},
		{"entry before its directory", []ent{dirE("site/"), fileE("site/a/f", "x")}, "not inside a directory of the archive"},
		{"hard link out", []ent{dirE("site/"), hardE("site/h", "/etc/passwd")}, "not a file of the archive"},
		{"hard link up", []ent{dirE("site/"), hardE("site/h", "site/../../x")}, "not a file of the archive"},
		{"hard link to a directory", []ent{dirE("site/"), dirE("site/d/"), hardE("site/h", "site/d")}, "not a file of the archive"},
		{"character device", []ent{dirE("site/"), {name: "site/null", typ: tar.TypeChar}}, "character device"},
		{"named pipe", []ent{dirE("site/"), {name: "site/p", typ: tar.TypeFifo}}, "named pipe"},
		{"name too long", []ent{dirE("site/"), fileE("site/"+long, "x")}, "more than 4096"},
		{"file twice", []ent{dirE("site/"), fileE("site/f", "a"), fileE("site/f", "b")}, "comes twice"},
		{"link at the root", []ent{linkE("site", "/")}, "link at the archive's root"},
		{"empty archive", nil, "empty archive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			outside := filepath.Join(parent, "outside")
			os.WriteFile(outside, []byte("mine"), 0o644)
			before := listTree(t, parent)
			_, err := runExtract(t, archive(t, tc.entries...), filepath.Join(parent, "out"), true)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "path" || !strings.Contains(fe.Reason, tc.want) {
				t.Fatalf("got %v; want a refusal of path saying %q", err, tc.want)
			}
			if after := listTree(t, parent); !slices.Equal(before, after) {
				t.Errorf("the host changed: %v, then %v", before, after)
			}
			if b, _ := os.ReadFile(outside); string(b) != "mine" {
				t.Errorf("a file outside hostPath changed: %q", b)
			}
		})
	}
}

// TestExtractTree checks that a good tree arrives whole: contents, modes
// without setuid, links inside, hard links, and directory modes applied
// after their contents.
func TestExtractTree(t *testing.T) {
	parent := t.TempDir()
	host := filepath.Join(parent, "out")
	entries := []ent{
		dirE("site/"), fileE("site/index.html", "<h1>hi</h1>"),
		{name: "site/run", body: "#!/bin/sh", typ: tar.TypeReg, mode: 0o4755},
		dirE("site/node_modules/"), dirE("site/node_modules/pkg/"), fileE("site/node_modules/pkg/cli.js", "js"),
		dirE("site/node_modules/.bin/"), linkE("site/node_modules/.bin/cli", "../pkg/cli.js"),
		linkE("site/self", "."), hardE("site/same", "site/index.html"),
		{name: "site/locked/", typ: tar.TypeDir, mode: 0o555}, fileE("site/locked/f", "x"),
	}
	got, err := runExtract(t, archive(t, entries...), host, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != (Copied{Files: 7, Bytes: int64(len("<h1>hi</h1>") + len("#!/bin/sh") + len("js") + 1)}) {
		t.Errorf("copied %+v", got)
	}
	checks := map[string]os.FileMode{"index.html": 0o644, "run": 0o755, "locked": os.ModeDir | 0o555, "node_modules": os.ModeDir | 0o755, "locked/f": 0o644}
	for rel, want := range checks {
		info, err := os.Lstat(filepath.Join(host, rel))
		if err != nil || info.Mode() != want {
			t.Errorf("%s: %v %v; want %v", rel, info.Mode(), err, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(host, "node_modules/.bin/cli")); err != nil || string(b) != "js" {
		t.Errorf("link: %q %v", b, err)
	}
	a, _ := os.Stat(filepath.Join(host, "same"))
	b, _ := os.Stat(filepath.Join(host, "index.html"))
	if !os.SameFile(a, b) {
		t.Error("the hard link is not the same file")
	}
	if left := listTree(t, parent); len(left) != len(listTree(t, host))+1 {
		t.Errorf("something beside hostPath was left: %v", left)
	}
}

// TestExtractOntoExisting checks what a download does to what is there:
// a file is replaced only with overwrite, a directory is merged into,
// and never through a link that was there.
func TestExtractOntoExisting(t *testing.T) {
	tree := func() *bytes.Buffer {
		return archive(t, dirE("site/"), fileE("site/new", "new"), fileE("site/old", "fresh"), dirE("site/sub/"), fileE("site/sub/f", "x"))
	}
	t.Run("a file needs overwrite", func(t *testing.T) {
		host := filepath.Join(t.TempDir(), "f")
		os.WriteFile(host, []byte("mine"), 0o600)
		if _, err := runExtract(t, archive(t, fileE("f", "theirs")), host, false); err == nil {
			t.Fatal("replaced a file without overwrite")
		}
		if b, _ := os.ReadFile(host); string(b) != "mine" {
			t.Fatalf("file now %q", b)
		}
		if _, err := runExtract(t, archive(t, fileE("f", "theirs")), host, true); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(host); string(b) != "theirs" {
			t.Fatalf("file now %q", b)
		}
	})
	t.Run("merge refuses a clash without overwrite, changing nothing", func(t *testing.T) {
		host := t.TempDir()
		os.WriteFile(filepath.Join(host, "old"), []byte("mine"), 0o644)
		before := listTree(t, host)
		_, err := runExtract(t, tree(), host, false)
		if err == nil || !strings.Contains(err.Error(), "old") || !strings.Contains(err.Error(), "overwrite") {
			t.Fatalf("got %v", err)
		}
		if after := listTree(t, host); !slices.Equal(before, after) {
			t.Fatalf("changed: %v", after)
		}
		if _, err := runExtract(t, tree(), host, true); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(host, "old")); string(b) != "fresh" {
			t.Fatalf("old is %q", b)
		}
	})
	t.Run("never through a link already there", func(t *testing.T) {
		host, elsewhere := t.TempDir(), t.TempDir()
		os.Symlink(elsewhere, filepath.Join(host, "sub"))
		if _, err := runExtract(t, tree(), host, true); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Fatalf("got %v", err)
		}
		if left := listTree(t, elsewhere); len(left) != 1 {
			t.Fatalf("wrote through the link: %v", left)
		}
	})
	t.Run("a link out through a link already there", func(t *testing.T) {
		host := t.TempDir()
		os.Symlink("/etc", filepath.Join(host, "etc"))
		_, err := runExtract(t, archive(t, dirE("site/"), linkE("site/pw", "etc/passwd")), host, true)
		if err == nil || !strings.Contains(err.Error(), "leads out") {
			t.Fatalf("got %v", err)
		}
	})
}
