package sandboxfs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// makeTree writes a tree like a project's: nFiles small files of a few
// bytes to a few KiB in nested directories, one big file, executables,
// private files, an empty and a locked directory, and links that stay
// inside. The content is pseudo-random from seed.
func makeTree(t testing.TB, root string, nFiles int, bigBytes int64, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "empty"), 0o755))
	for i := range nFiles {
		dir := filepath.Join(root, fmt.Sprintf("pkg%02d", i%40), fmt.Sprintf("sub%d", i%7))
		must(os.MkdirAll(dir, 0o755))
		data := make([]byte, rng.IntN(4096))
		fillRandom(rng, data)
		mode := os.FileMode(0o644)
		switch i % 10 {
		case 3:
			mode = 0o755
		case 7:
			mode = 0o600
		}
		must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%04d.js", i)), data, mode))
		os.Chmod(filepath.Join(dir, fmt.Sprintf("file%04d.js", i)), mode) // past the umask
	}
	if bigBytes > 0 {
		writeBig(t, filepath.Join(root, "big.bin"), bigBytes, rng)
	}
	must(os.MkdirAll(filepath.Join(root, ".bin"), 0o755))
	must(os.Symlink("../pkg01/sub1/file0001.js", filepath.Join(root, ".bin", "tool")))
	must(os.Symlink("pkg02", filepath.Join(root, "alias")))
	must(os.Symlink("missing-but-inside", filepath.Join(root, "dangling")))
	must(os.MkdirAll(filepath.Join(root, "locked"), 0o755))
	must(os.WriteFile(filepath.Join(root, "locked", "inside"), []byte("x"), 0o644))
	must(os.Chmod(filepath.Join(root, "locked"), 0o555))
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "locked"), 0o755) })
}

func fillRandom(rng *rand.Rand, b []byte) {
	for i := 0; i+8 <= len(b); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

func writeBig(t testing.TB, file string, n int64, rng *rand.Rand) {
	if rng == nil {
		rng = rand.New(rand.NewPCG(7, 7))
	}
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for n > 0 {
		fillRandom(rng, chunk)
		w := min(n, int64(len(chunk)))
		if _, err := f.Write(chunk[:w]); err != nil {
			t.Fatal(err)
		}
		n -= w
	}
}

// treeSummary describes every entry of a tree: its type and permission
// bits, and a file's SHA-256 or a link's target.
func treeSummary(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case info.Mode().IsRegular():
			desc += " " + fileHash(t, p)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fileHash(t testing.TB, p string) string {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil))
}

// sameTree fails the test at the first difference between two trees.
func sameTree(t testing.TB, want, got map[string]string) {
	t.Helper()
	for rel, w := range want {
		if g, ok := got[rel]; !ok {
			t.Errorf("%s is missing", rel)
		} else if g != w {
			t.Errorf("%s: got %s, want %s", rel, g, w)
		}
	}
	for rel := range got {
		if _, ok := want[rel]; !ok {
			t.Errorf("%s should not be there", rel)
		}
	}
}
