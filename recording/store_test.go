package recording

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenGivesOnlyTheProjectsOwnRecordings(t *testing.T) {
	dir := t.TempDir()
	r := New(nil, nil, Config{Dir: dir})
	put := func(info Info, video bool) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, info.ContainerName), 0o700); err != nil {
			t.Fatal(err)
		}
		info.Path = filepath.Join(dir, info.ContainerName, info.ID+".webm")
		if video {
			if err := os.WriteFile(info.Path, []byte("webm"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeInfo(info); err != nil {
			t.Fatal(err)
		}
	}
	put(Info{ID: "20261128-060000-aaaaaaaa", ProjectPath: "/a", ContainerName: "box-a"}, true)
	put(Info{ID: "20261128-060000-bbbbbbbb", ProjectPath: "/b", ContainerName: "box-b"}, true)
	put(Info{ID: "20261128-060000-cccccccc", ProjectPath: "/a", ContainerName: "box-a"}, false)

	f, _, err := r.Open("20261128-060000-aaaaaaaa", "/a")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct{ id, project string }{
		{"20261128-060000-bbbbbbbb", "/a"}, // another project's
		{"20261128-060000-cccccccc", "/a"}, // no video
		{"../box-b/20261128-060000-bbbbbbbb", "/b"},
		{"20261128-060000-dddddddd", "/a"},
	} {
		if f, _, err := r.Open(c.id, c.project); !errors.Is(err, ErrNotFound) {
			if f != nil {
				f.Close()
			}
			t.Errorf("Open(%q, %q): %v; want ErrNotFound", c.id, c.project, err)
		}
	}
	list, err := r.List("/a")
	if err != nil || len(list) != 2 {
		t.Fatalf("List(/a): %d, %v; want the two of /a", len(list), err)
	}
}
