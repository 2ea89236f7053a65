package projectfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

func TestForwardsAreKeptPerProjectInTheStateDirectory(t *testing.T) {
	state := t.TempDir()
	f := projectfs.NewForwards(state)
	a, b := "/home/me/a", "/home/me/b"
	if list, err := f.Read(a); list != nil || err != nil {
		t.Fatalf("nothing kept: %v, %v", list, err)
	}
	add := func(project string, fw projectfs.Forward) {
		t.Helper()
		err := f.Change(project, func(l []projectfs.Forward) ([]projectfs.Forward, error) { return append(l, fw), nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	add(a, projectfs.Forward{Port: 5432, HostPort: 15432})
	add(a, projectfs.Forward{Port: 3000, HostPort: 3000})
	add(b, projectfs.Forward{Port: 8080, HostPort: 8080})
	if got, _ := f.Read(a); !reflect.DeepEqual(got, []projectfs.Forward{{3000, 3000}, {5432, 15432}}) {
		t.Errorf("a: %+v", got)
	}
	if got, _ := f.Read(b); !reflect.DeepEqual(got, []projectfs.Forward{{8080, 8080}}) {
		t.Errorf("b: %+v", got)
	}
	files, _ := filepath.Glob(filepath.Join(state, "forwards", "*.json"))
	if len(files) != 2 {
		t.Fatalf("files: %v", files)
	}
	if info, err := os.Stat(files[0]); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v, %v", info.Mode(), err)
	}
	refused := errors.New("no")
	if err := f.Change(a, func([]projectfs.Forward) ([]projectfs.Forward, error) { return nil, refused }); err != refused {
		t.Errorf("a refused change: %v", err)
	}
	if got, _ := f.Read(a); len(got) != 2 {
		t.Errorf("a refused change changed the file: %+v", got)
	}
	if err := f.Change(b, func([]projectfs.Forward) ([]projectfs.Forward, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "forwards", "*.json")); len(files) != 1 {
		t.Errorf("an empty list leaves its file: %v", files)
	}
}

func TestForwardsSetACorruptFileAside(t *testing.T) {
	state := t.TempDir()
	f := projectfs.NewForwards(state)
	project := "/home/me/a"
	if err := f.Change(project, func([]projectfs.Forward) ([]projectfs.Forward, error) { return []projectfs.Forward{{3000, 3000}}, nil }); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(state, "forwards", "*.json"))
	for _, bad := range []string{"{not json", `{"project": "/home/me/other", "forwards": [{"port": 1, "hostPort": 1}]}`} {
		if err := os.WriteFile(files[0], []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if list, err := f.Read(project); err == nil || list != nil {
			t.Errorf("%s: read %+v, %v", bad, list, err)
		}
		err := f.Change(project, func(l []projectfs.Forward) ([]projectfs.Forward, error) {
			return append(l, projectfs.Forward{Port: 4000, HostPort: 4000}), nil
		})
		if got, _ := f.Read(project); err != nil || !reflect.DeepEqual(got, []projectfs.Forward{{4000, 4000}}) {
			t.Errorf("%s: after a change %+v, %v", bad, got, err)
		}
		if !keptAside(t, filepath.Join(state, "forwards"), bad) {
			t.Errorf("%s: not kept aside", bad)
		}
	}
}

// keptAside says whether a file set aside in dir holds data.
func keptAside(t *testing.T, dir, data string) bool {
	aside, _ := filepath.Glob(filepath.Join(dir, "*.corrupt-*"))
	for _, path := range aside {
		if got, err := os.ReadFile(path); err == nil && string(got) == data {
			return true
		}
	}
	return false
}
