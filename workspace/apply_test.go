package workspace_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

func TestDiffAndApplyATasksChange(t *testing.T) {
	l := newLocal(t)
	write(t, l.project, "main.go", "package main\n")
	write(t, l.project, "gone.txt", "bye\n")
	write(t, l.project, "run.sh", "#!/bin/sh\n")
	base := l.sync().Base
	commit := l.task(base, func(dir string) {
		write(t, dir, "main.go", "package main\n\nfunc main() {}\n")
		write(t, dir, "pkg/new.go", "package pkg\n")
		os.Remove(filepath.Join(dir, "gone.txt"))
		os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
		os.Symlink("main.go", filepath.Join(dir, "link"))
	})
	ctx := context.Background()
	d, err := l.ws.Diff(ctx, base, commit)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, f := range d.Files {
		status[f.Path] = f.Status
	}
	want := map[string]string{"main.go": "modified", "pkg/new.go": "added", "gone.txt": "deleted", "run.sh": "modified", "link": "added"}
	if !reflect.DeepEqual(status, want) || d.Base != base || !strings.Contains(d.Patch, "+func main() {}") {
		t.Fatalf("diff: %+v", d)
	}
	if l.read("main.go") != "package main\n" {
		t.Fatal("the diff changed the host")
	}
	applied, err := l.ws.Apply(ctx, base, commit, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(applied)
	if !reflect.DeepEqual(applied, []string{"gone.txt", "link", "main.go", "pkg/new.go", "run.sh"}) {
		t.Errorf("applied %v", applied)
	}
	if l.read("main.go") != "package main\n\nfunc main() {}\n" || l.read("pkg/new.go") != "package pkg\n" {
		t.Error("the host does not have the task's files")
	}
	if _, err := os.Lstat(filepath.Join(l.project, "gone.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("gone.txt is still there")
	}
	if info, _ := os.Stat(filepath.Join(l.project, "run.sh")); info.Mode()&0o111 != 0o111 {
		t.Errorf("run.sh is %v; want executable", info.Mode())
	}
	if target, _ := os.Readlink(filepath.Join(l.project, "link")); target != "main.go" {
		t.Errorf("link -> %q", target)
	}
	if left := l.leftovers(); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if _, err := l.ws.Apply(ctx, base, commit, nil); err != nil {
		t.Errorf("applying again, over the task's own files: %v", err)
	}
}

// TestApplyRefusesAHostEdit: a file the user changed since the base is a
// conflict naming it, and nothing is written; undone, the apply goes.
func TestApplyRefusesAHostEdit(t *testing.T) {
	l := newLocal(t)
	write(t, l.project, "a.txt", "base\n")
	write(t, l.project, "b.txt", "base\n")
	base := l.sync().Base
	commit := l.task(base, func(dir string) {
		write(t, dir, "a.txt", "task\n")
		write(t, dir, "b.txt", "task\n")
		write(t, dir, "c.txt", "task\n")
	})
	write(t, l.project, "a.txt", "the user's edit\n")
	write(t, l.project, "c.txt", "the user's new file\n")
	_, err := l.ws.Apply(context.Background(), base, commit, nil)
	var conflict *workspace.ConflictError
	if !errors.As(err, &conflict) || !reflect.DeepEqual(conflict.Paths, []string{"a.txt", "c.txt"}) {
		t.Fatalf("got %v; want a conflict naming a.txt and c.txt", err)
	}
	if l.read("b.txt") != "base\n" || l.read("a.txt") != "the user's edit\n" || len(l.leftovers()) > 0 {
		t.Fatal("a refused apply wrote something")
	}
	write(t, l.project, "a.txt", "base\n")
	os.Remove(filepath.Join(l.project, "c.txt"))
	if _, err := l.ws.Apply(context.Background(), base, commit, nil); err != nil {
		t.Fatal(err)
	}
	if l.read("a.txt") != "task\n" || l.read("c.txt") != "task\n" {
		t.Error("the apply after the undo did not write the task's files")
	}
}

func TestApplyOnlyThePathsNamed(t *testing.T) {
	l := newLocal(t)
	write(t, l.project, "a", "1")
	base := l.sync().Base
	commit := l.task(base, func(dir string) {
		write(t, dir, "a", "2")
		write(t, dir, "b", "2")
	})
	ctx := context.Background()
	if _, err := l.ws.Apply(ctx, base, commit, []string{"nope"}); !errors.Is(err, workspace.ErrBadPath) {
		t.Fatalf("a path the task did not change: %v", err)
	}
	if _, err := l.ws.Apply(ctx, base, commit, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if l.read("a") != "1" || l.read("b") != "2" {
		t.Error("apply of b alone")
	}
}

// TestApplyRefusesLinksOut: a link the task made that leads out of the
// project, and a link the user put on the way to a changed file.
func TestApplyRefusesLinksOut(t *testing.T) {
	for name, tc := range map[string]struct {
		task func(t *testing.T, dir string)
		host func(t *testing.T, project string)
	}{
		"a link to an absolute path": {task: func(t *testing.T, dir string) { os.Symlink("/etc/passwd", filepath.Join(dir, "out")) }},
		"a link that climbs out":     {task: func(t *testing.T, dir string) { os.Symlink("../../x", filepath.Join(dir, "src/out")) }},
		"a host link on the way": {
			task: func(t *testing.T, dir string) { write(t, dir, "src/main.go", "task\n") },
			host: func(t *testing.T, project string) {
				outside := t.TempDir()
				write(t, outside, "main.go", "base\n")
				os.RemoveAll(filepath.Join(project, "src"))
				os.Symlink(outside, filepath.Join(project, "src"))
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := newLocal(t)
			write(t, l.project, "src/main.go", "base\n")
			base := l.sync().Base
			commit := l.task(base, func(dir string) { tc.task(t, dir) })
			if tc.host != nil {
				tc.host(t, l.project)
			}
			_, err := l.ws.Apply(context.Background(), base, commit, nil)
			if !errors.Is(err, workspace.ErrUnsafe) {
				t.Fatalf("got %v; want a refusal", err)
			}
			if len(l.leftovers()) > 0 {
				t.Errorf("temporary files left: %v", l.leftovers())
			}
		})
	}
}

// TestApplyRefusesAHostileChange: what the sandbox says of a change is
// checked: paths out of the project or into .git, and contents that are
// not their blob.
func TestApplyRefusesAHostileChange(t *testing.T) {
	for name, tc := range map[string]struct {
		from, to string // replaced in the raw diff, or in the blobs
		blobs    bool
	}{
		"../":              {from: "a.txt", to: "../a.txt"},
		"absolute":         {from: "a.txt", to: "/tmp/a.txt"},
		"into .git":        {from: "a.txt", to: ".git/hooks/a"},
		"into .pilot":      {from: "a.txt", to: "x/.pilot/a"},
		"not clean":        {from: "a.txt", to: "x/./a.txt"},
		"a submodule":      {from: ":100644 100644", to: ":100644 160000"},
		"content not blob": {from: "task\n", to: "evil\n", blobs: true},
	} {
		t.Run(name, func(t *testing.T) {
			l := newLocal(t)
			write(t, l.project, "a.txt", "base\n")
			base := l.sync().Base
			commit := l.task(base, func(dir string) { write(t, dir, "a.txt", "task\n") })
			l.sb.rewrite = func(argv []string, out []byte) []byte {
				if slices.Contains(argv, "blobs") == tc.blobs && (slices.Contains(argv, "raw") || tc.blobs) {
					return []byte(strings.Replace(string(out), tc.from, tc.to, 1))
				}
				return out
			}
			_, err := l.ws.Apply(context.Background(), base, commit, nil)
			if err == nil {
				t.Fatal("a hostile change was applied")
			}
			if l.read("a.txt") != "base\n" || len(l.leftovers()) > 0 {
				t.Fatal("a refused apply wrote something")
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(l.project), "a.txt")); err == nil {
				t.Fatal("a file was written out of the project")
			}
		})
	}
}

// TestApplyToAReadOnlyOrMovedProject: a clear error, nothing written.
func TestApplyToAReadOnlyOrMovedProject(t *testing.T) {
	l := newLocal(t)
	write(t, l.project, "a.txt", "base\n")
	base := l.sync().Base
	commit := l.task(base, func(dir string) {
		write(t, dir, "a.txt", "task\n")
		write(t, dir, "b.txt", "task\n")
	})
	readOnly(t, l.project)
	_, err := l.ws.Apply(context.Background(), base, commit, nil)
	if err == nil || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("a read-only project: %v", err)
	}
	if l.read("a.txt") != "base\n" {
		t.Fatal("a refused apply wrote something")
	}
	moved := l.project + "-moved"
	writable(t, l.project)
	if err := os.Rename(l.project, moved); err != nil {
		t.Fatal(err)
	}
	_, err = l.ws.Apply(context.Background(), base, commit, nil)
	if err == nil || !strings.Contains(err.Error(), "moved or removed") {
		t.Fatalf("a moved project: %v", err)
	}
}

// readOnly makes dir unwritable, for root too (which ignores modes): the
// immutable attribute.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("as root, a read-only directory needs chattr +i: %v %s", err, out)
	}
	t.Cleanup(func() { writable(t, dir) })
}

func writable(t *testing.T, dir string) {
	if os.Geteuid() == 0 {
		exec.Command("chattr", "-i", dir).Run()
	} else {
		os.Chmod(dir, 0o755)
	}
}
