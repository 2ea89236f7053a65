package sandboxfs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// sandbox is a real sandbox for the files tests.
type sandbox struct {
	t       *testing.T
	m       *service.Manager
	project string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	m, docker := dockertest.Manager(t, nil)
	project := dockertest.Project(t, docker)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := m.Start(ctx, project); err != nil {
		t.Fatal(err)
	}
	return &sandbox{t: t, m: m, project: project}
}

func (s *sandbox) files() *sandboxfs.FS {
	s.t.Helper()
	f, err := s.m.Files(context.Background(), s.project)
	if err != nil {
		s.t.Fatal(err)
	}
	return f
}

// sh runs a command in the sandbox and returns its stdout, failing the
// test unless it exits 0.
func (s *sandbox) sh(command string) string {
	s.t.Helper()
	out, err := s.m.Exec(context.Background(), s.project, service.ExecRequest{Command: command, Timeout: 2 * time.Minute})
	if err != nil || out.ExitCode != 0 {
		s.t.Fatalf("%s: %v %+v", command, err, out)
	}
	return out.Stdout
}

func refusedField(t *testing.T, err error, field string) {
	t.Helper()
	var fe *sandboxfs.FieldError
	if !errors.As(err, &fe) || fe.Field != field {
		t.Fatalf("got %v; want a refusal naming %s", err, field)
	}
}

// TestTreeRoundTrip uploads a tree of a few thousand files with a 100 MB
// one into a real sandbox, checks that the sandbox user owns all of it,
// downloads it back and compares every byte, mode and link.
func TestTreeRoundTrip(t *testing.T) {
	s := newSandbox(t)
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "tree")
	makeTree(t, src, 3000, 100<<20, 1)
	want := treeSummary(t, src)

	files := s.files()
	up, err := files.Upload(ctx, src, "tree")
	if err != nil {
		t.Fatal(err)
	}
	if up.Files != 3000+1+3+1 || up.Bytes < 100<<20 {
		t.Errorf("uploaded %+v", up)
	}
	if n := s.sh("find /home/sandbox/tree ! -user sandbox -o ! -group sandbox | wc -l"); strings.TrimSpace(n) != "0" {
		t.Errorf("%s entries are not the sandbox user's", n)
	}
	wantSum := fileHash(t, filepath.Join(src, "big.bin"))
	if got := strings.Fields(s.sh("sha256sum /home/sandbox/tree/big.bin"))[0]; got != wantSum {
		t.Errorf("big.bin in the sandbox: %s, want %s", got, wantSum)
	}

	back := filepath.Join(t.TempDir(), "back")
	down, err := files.Download(ctx, "/home/sandbox/tree", back, false)
	if err != nil {
		t.Fatal(err)
	}
	if down != up {
		t.Errorf("downloaded %+v, uploaded %+v", down, up)
	}
	sameTree(t, want, treeSummary(t, back))
}

// TestReadWriteAndCaps reads a 25 MiB file in chunks by offset, and
// checks the 10 MiB caps and the answers for what is not there.
func TestReadWriteAndCaps(t *testing.T) {
	s := newSandbox(t)
	ctx := context.Background()
	files := s.files()
	s.sh("head -c 26214400 /dev/urandom > /home/sandbox/big && chmod 640 big")
	want := strings.Fields(s.sh("sha256sum big"))[0]

	h := sha256.New()
	var offset int64
	for {
		r, err := files.Read(ctx, "big", offset, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Size != 25<<20 || len(r.Data) > sandboxfs.MaxIO {
			t.Fatalf("read at %d: size %d, %d bytes", offset, r.Size, len(r.Data))
		}
		h.Write(r.Data)
		offset += int64(len(r.Data))
		if r.EOF {
			break
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want || offset != 25<<20 {
		t.Fatalf("read %d bytes with sha256 %s; want %s", offset, got, want)
	}
	r, err := files.Read(ctx, "/home/sandbox/big", 25<<20-3, 100)
	if err != nil || len(r.Data) != 3 || !r.EOF {
		t.Fatalf("the last 3 bytes: %d %v %v", len(r.Data), r.EOF, err)
	}

	_, err = files.Write(ctx, sandboxfs.WriteRequest{Path: "huge", Data: make([]byte, sandboxfs.MaxIO+1)})
	refusedField(t, err, "data")
	_, err = files.Read(ctx, "big", 0, sandboxfs.MaxIO+1)
	refusedField(t, err, "length")
	_, err = files.Read(ctx, "/home/sandbox", 0, 0)
	refusedField(t, err, "path")
	if _, err := files.Read(ctx, "nothing/here", 0, 0); !errors.Is(err, sandboxfs.ErrNotFound) {
		t.Fatalf("read of a missing file: %v", err)
	}
	if st, err := files.Stat(ctx, "nothing"); st != nil || err != nil {
		t.Fatalf("stat of a missing file: %v %v", st, err)
	}

	w, err := files.Write(ctx, sandboxfs.WriteRequest{Path: "big", Data: []byte("small now")})
	if err != nil || w.Size != 9 {
		t.Fatal(w, err)
	}
	if got := s.sh("stat -c '%U %a %s' big"); got != "sandbox 640 9\n" {
		t.Errorf("a rewritten file is %q; want its owner and mode kept", got)
	}
}

// TestStoppedSandbox writes and reads files of a stopped sandbox, lists
// and makes directories, and finds them all after the next start.
func TestStoppedSandbox(t *testing.T) {
	s := newSandbox(t)
	ctx := context.Background()
	s.sh("mkdir -p d/sub && printf abc > d/f && ln -s f d/link && chmod 700 d/sub")
	running := s.files()
	before, err := running.List(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.m.Stop(ctx, s.project); err != nil {
		t.Fatal(err)
	}
	files := s.files()
	after, err := files.List(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	byName := func(a, b sandboxfs.Entry) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(before.Entries, byName)
	slices.SortFunc(after.Entries, byName)
	if !slices.Equal(before.Entries, after.Entries) || len(after.Entries) != 3 {
		t.Errorf("listed running: %+v\nlisted stopped: %+v", before.Entries, after.Entries)
	}

	mode := 0o600
	if _, err := files.Write(ctx, sandboxfs.WriteRequest{Path: "new/dir/secret", Data: []byte("kept"), Mode: &mode, CreateParents: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := files.Write(ctx, sandboxfs.WriteRequest{Path: "no/parents/f", Data: []byte("x")}); !errors.Is(err, sandboxfs.ErrNotFound) {
		t.Fatalf("write without its directory: %v", err)
	}
	if _, err := files.Mkdir(ctx, "made/deep"); err != nil {
		t.Fatal(err)
	}
	if r, err := files.Read(ctx, "new/dir/secret", 0, 0); err != nil || string(r.Data) != "kept" {
		t.Fatalf("read while stopped: %q %v", r.Data, err)
	}
	if r, err := files.Read(ctx, "d/link", 1, 0); err != nil || string(r.Data) != "bc" {
		t.Fatalf("read through a link: %q %v", r.Data, err)
	}
	if _, err := files.Remove(ctx, "d/f", false); !errors.Is(err, service.ErrNotRunning) {
		t.Fatalf("remove while stopped: %v", err)
	}
	if _, err := s.m.Start(ctx, s.project); err != nil {
		t.Fatal(err)
	}
	got := s.sh("stat -c '%n %U:%G %a' new new/dir new/dir/secret made made/deep")
	want := "new sandbox:sandbox 755\nnew/dir sandbox:sandbox 755\nnew/dir/secret sandbox:sandbox 600\nmade sandbox:sandbox 755\nmade/deep sandbox:sandbox 755\n"
	if got != want {
		t.Errorf("after the start:\n%s\nwant:\n%s", got, want)
	}
}

// TestRemove removes files, links and directories as the sandbox user.
func TestRemove(t *testing.T) {
	s := newSandbox(t)
	ctx := context.Background()
	files := s.files()
	s.sh("mkdir -p full/x empty && touch full/x/f && ln -s /etc link")
	for _, tc := range []struct {
		path      string
		recursive bool
		removed   bool
		field     string
	}{
		{path: "full", field: "recursive"},
		{path: "empty", removed: true},
		{path: "link", removed: true},
		{path: "full", recursive: true, removed: true},
		{path: "gone"},
		{path: "/etc/hostname", field: "path"}, // root's, not the sandbox user's
		{path: "/home/sandbox", recursive: true, field: "path"},
	} {
		removed, err := files.Remove(ctx, tc.path, tc.recursive)
		if tc.field != "" {
			refusedField(t, err, tc.field)
			continue
		}
		if err != nil || removed != tc.removed {
			t.Errorf("remove %s: %v %v", tc.path, removed, err)
		}
	}
	if got := s.sh("ls -A; test -e /etc/passwd && echo etc-intact"); got != "etc-intact\n" && !strings.HasSuffix(got, "etc-intact\n") {
		t.Errorf("left: %q", got)
	}
	if got := s.sh("ls /home/sandbox | grep -c -E '^(full|empty|link)$' || true"); got != "0\n" {
		t.Errorf("not removed: %q", got)
	}
}

// TestHostileDownload downloads trees the sandbox made to lead out of
// hostPath: links going up and out, absolute links, a named pipe. Each is
// refused and leaves the host as it was; a good tree with links and hard
// links inside arrives whole; a file is replaced only with overwrite.
func TestHostileDownload(t *testing.T) {
	s := newSandbox(t)
	ctx := context.Background()
	files := s.files()
	s.sh(`mkdir -p up/a/b abs fifo good/lib && printf secret > up/a/b/f && ln -s ../../../../../../etc up/a/b/escape &&
		ln -s /etc/passwd abs/passwd && mkfifo fifo/pipe &&
		printf lib > good/lib/x.js && ln -s lib/x.js good/entry && ln -s ../entry good/lib/back && ln good/lib/x.js good/hard && printf one > one.txt`)
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "keep"), []byte("mine"), 0o644)
	before := listing(t, host)
	for _, p := range []string{"up", "abs", "fifo"} {
		_, err := files.Download(ctx, p, filepath.Join(host, "out"), true)
		refusedField(t, err, "path")
		if after := listing(t, host); !slices.Equal(before, after) {
			t.Fatalf("download of %s changed the host: %v", p, after)
		}
	}
	if _, err := files.Download(ctx, "not/there", filepath.Join(host, "out"), false); !errors.Is(err, sandboxfs.ErrNotFound) {
		t.Fatalf("download of a missing path: %v", err)
	}

	good := filepath.Join(host, "good")
	if _, err := files.Download(ctx, "good", good, false); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(good, "lib", "back")); err != nil || string(b) != "lib" {
		t.Errorf("link inside: %q %v", b, err)
	}
	a, _ := os.Stat(filepath.Join(good, "hard"))
	b, _ := os.Stat(filepath.Join(good, "lib", "x.js"))
	if !os.SameFile(a, b) {
		t.Error("the hard link is two files")
	}

	keep := filepath.Join(host, "keep")
	_, err := files.Download(ctx, "one.txt", keep, false)
	refusedField(t, err, "hostPath")
	if b, _ := os.ReadFile(keep); string(b) != "mine" {
		t.Fatalf("replaced without overwrite: %q", b)
	}
	if _, err := files.Download(ctx, "one.txt", keep, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(keep); string(b) != "one" {
		t.Fatalf("overwrite: %q", b)
	}
}

func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		out = append(out, p+" "+d.Type().String())
		return err
	})
	return out
}
