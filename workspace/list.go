package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// What a sync takes from the project (docs/tasks.md, "What a sync
// copies"):
//
//   - In a git work tree: what `git ls-files --cached --others
//     --exclude-standard` lists (tracked files, and untracked ones no
//     .gitignore, info/exclude or global excludes file ignores), run with
//     the user's own git on the host. A listed directory is a submodule or
//     a nested repository: its files are listed the same way, by its own
//     git (nothing for a submodule that is not checked out).
//   - Outside a work tree, or without git: every file under the project.
//   - Never a .git directory or file, never anything under a directory
//     named .pilot (the sidecar's and the app's state), at any depth.
//   - Files and symbolic links only; a link is sent as a link, never
//     followed. Sockets, pipes and devices are left out.

// maxNesting bounds how deep nested repositories are followed.
const maxNesting = 16

// listed is one file of the project: its slash-separated path relative to
// the project, and its lstat.
type listed struct {
	rel  string
	info fs.FileInfo
}

// excluded says a relative path is never synced.
func excluded(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.EqualFold(part, ".git") || part == ".pilot" {
			return true
		}
	}
	return false
}

// listProject calls yield for each file of the project.
func listProject(ctx context.Context, root string, yield func(listed) error) error {
	return listTree(ctx, root, "", 0, yield)
}

// listTree lists the tree at root/prefix: by git when it is a work tree,
// by walking otherwise.
func listTree(ctx context.Context, root, prefix string, depth int, yield func(listed) error) error {
	dir := filepath.Join(root, filepath.FromSlash(prefix))
	if depth < maxNesting && inWorkTree(ctx, dir) {
		err := listByGit(ctx, root, prefix, depth, yield)
		if !errors.Is(err, errNoGit) {
			return err
		}
	}
	return walk(ctx, root, prefix, yield)
}

// errNoGit: git could not list the tree (it went away, or failed).
var errNoGit = errors.New("git cannot list it")

// inWorkTree says git takes dir for (a part of) a work tree.
func inWorkTree(ctx context.Context, dir string) bool {
	out, err := gitCommand(ctx, dir, "rev-parse", "--is-inside-work-tree").Output()
	return err == nil && bytes.Equal(bytes.TrimSpace(out), []byte("true"))
}

func gitCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.quotePath=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	return cmd
}

// listByGit lists what git lists in root/prefix, streaming its output.
func listByGit(ctx context.Context, root, prefix string, depth int, yield func(listed) error) error {
	cmd := gitCommand(ctx, filepath.Join(root, filepath.FromSlash(prefix)),
		"ls-files", "-z", "--cached", "--others", "--exclude-standard")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4096}
	if err := cmd.Start(); err != nil {
		return errNoGit
	}
	err = readNames(out, func(name string) error {
		return visit(ctx, root, path.Join(prefix, name), depth, yield)
	})
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("list %s with git: %v: %s", filepath.Join(root, prefix), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// readNames calls fn for each NUL-terminated name, once each: an
// unmerged path is listed once per stage, one after another.
func readNames(r io.Reader, fn func(string) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	last := ""
	for {
		name, err := br.ReadString(0)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name = strings.TrimSuffix(strings.TrimSuffix(name, "\x00"), "/")
		if name == "" || name == last {
			continue
		}
		last = name
		if err := fn(name); err != nil {
			return err
		}
	}
}

// visit yields one listed name, or lists it as a tree of its own if it is
// a directory (a submodule or a nested repository).
func visit(ctx context.Context, root, rel string, depth int, yield func(listed) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if excluded(rel) {
		return nil
	}
	info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // tracked, but deleted in the work tree
	case err != nil:
		return err
	case info.IsDir():
		return listTree(ctx, root, rel, depth+1, yield)
	case info.Mode().IsRegular() || info.Mode()&fs.ModeSymlink != 0:
		return yield(listed{rel: rel, info: info})
	}
	return nil
}

// walk lists every file and link under root/prefix.
func walk(ctx context.Context, root, prefix string, yield func(listed) error) error {
	top := filepath.Join(root, filepath.FromSlash(prefix))
	return filepath.WalkDir(top, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, file)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == "." || file == top && d.IsDir():
			return nil
		case excluded(rel) && d.IsDir():
			return filepath.SkipDir
		case excluded(rel), d.IsDir():
			return nil
		case !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0:
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return yield(listed{rel: rel, info: info})
	})
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
