package projectfs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCanonicalProject(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	dir := filepath.Join(root, "proj")
	os.Mkdir(dir, 0o755)
	link := filepath.Join(root, "link")
	os.Symlink(dir, link)
	for _, in := range []string{dir, dir + "/", dir + "/.", root + "/x/../proj", link, link + "/"} {
		got, err := Canonical(in)
		if err != nil || got != dir {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, dir)
		}
	}
}
