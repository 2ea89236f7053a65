package sandboxfs

import (
	"archive/tar"
	"cmp"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// maxLinkHops is how many links one link may lead through, as Linux's
// ELOOP limit.
const maxLinkHops = 40

// extract writes the archive r to be hostPath (see Download). Nothing
// outside hostPath's parent directory is touched, and nothing there but
// hostPath and a temporary directory, gone at the end.
func extract(ctx context.Context, r io.Reader, hostPath string, overwrite bool, prog *reporter) (Copied, error) {
	parent, name, err := hostDest(hostPath)
	if err != nil {
		return Copied{}, err
	}
	root, err := os.OpenRoot(parent)
	if err != nil {
		return Copied{}, refuse("hostPath", "%v", err)
	}
	defer root.Close()
	space, err := newRoom(parent)
	if err != nil {
		return Copied{}, err
	}
	tmp, err := os.MkdirTemp(parent, "."+name+".pilot-download-")
	if err != nil {
		return Copied{}, refuse("hostPath", "%v", err)
	}
	x := &extractor{root: root, tmp: filepath.Base(tmp), dirs: map[string]dirMeta{}, prog: prog, buf: make([]byte, copyBuffer), space: space}
	defer root.RemoveAll(x.tmp)
	if err := x.readAll(ctx, tar.NewReader(r)); err != nil {
		return Copied{}, err
	}
	if err := x.checkLinks(filepath.Join(parent, name)); err != nil {
		return Copied{}, err
	}
	kept, err := x.place(name, overwrite)
	if err != nil {
		return Copied{}, err
	}
	if err := x.applyDirs(name, kept); err != nil {
		return Copied{}, err
	}
	return prog.done, nil
}

// hostDest splits hostPath into its existing parent directory (links
// resolved: the user's own) and its name; hostPath itself, if it is a
// link, is resolved too.
func hostDest(hostPath string) (string, string, error) {
	if !filepath.IsAbs(hostPath) {
		return "", "", refuse("hostPath", "must be an absolute path; got %q", hostPath)
	}
	p := filepath.Clean(hostPath)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", refuse("hostPath", "%v", err)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return "", "", refuse("hostPath", "its directory %s does not exist", filepath.Dir(p))
	}
	name := filepath.Base(p)
	if name == string(filepath.Separator) || name == "." {
		return "", "", refuse("hostPath", "cannot be %s", hostPath)
	}
	return parent, name, nil
}

// checkLinks refuses the download if a link it made leads out of
// hostPath once in place, following links on the way, the archive's own
// and those already in hostPath.
func (x *extractor) checkLinks(hostPath string) error {
	content := filepath.Join(x.rootDir(), x.tmp, contentName)
	return filepath.WalkDir(content, func(file string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		rel, _ := filepath.Rel(content, file)
		target, err := os.Readlink(file)
		if err != nil {
			return err
		}
		look := func(parts []string) (string, bool) { return lookLink(content, hostPath, parts) }
		dir := strings.Split(filepath.ToSlash(filepath.Dir(rel)), "/")
		if dir[0] == "." {
			dir = nil
		}
		hops := 0
		if _, out := resolve(look, dir, target, &hops); out {
			name := path.Join(x.rootName, filepath.ToSlash(rel))
			return entryError(name, "is a link to %q, which leads out of hostPath", target)
		}
		return nil
	})
}

func (x *extractor) rootDir() string { return x.root.Name() }

// lookLink says whether parts (relative to hostPath, every one but the
// last a real directory) will be a link once the download is in place,
// and to what: the download's own entries win over what hostPath holds.
func lookLink(content, hostPath string, parts []string) (string, bool) {
	rel := filepath.Join(parts...)
	for _, base := range []string{content, hostPath} {
		info, err := os.Lstat(filepath.Join(base, rel))
		if err != nil {
			continue
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			return "", false
		}
		target, err := os.Readlink(filepath.Join(base, rel))
		return target, err == nil
	}
	return "", false
}

// resolve follows target from the directory dir (components relative to
// the download's root) the way the kernel would, links included, and
// reports whether it ever leaves the root. Too many links count as
// leaving, as does an absolute target.
func resolve(look func([]string) (string, bool), dir []string, target string, hops *int) ([]string, bool) {
	if path.IsAbs(target) || filepath.IsAbs(target) {
		return nil, true
	}
	cur := slices.Clone(dir)
	for _, part := range strings.Split(filepath.ToSlash(target), "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, true
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := append(slices.Clone(cur), part)
		link, isLink := look(next)
		if !isLink {
			cur = next
			continue
		}
		if *hops++; *hops > maxLinkHops {
			return nil, true
		}
		var out bool
		if cur, out = resolve(look, cur, link, hops); out {
			return nil, true
		}
	}
	return cur, false
}

// place moves the extracted content to be hostPath's name in root: made
// new, replacing a file (with overwrite), or merged into a directory.
// kept lists the directories (relative to hostPath) that were there
// already.
func (x *extractor) place(name string, overwrite bool) (map[string]bool, error) {
	content := path.Join(x.tmp, contentName)
	have, err := x.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, x.hostErr(x.root.Rename(content, name))
	}
	if err != nil {
		return nil, x.hostErr(err)
	}
	got, err := x.root.Lstat(content)
	if err != nil {
		return nil, x.hostErr(err)
	}
	switch {
	case got.IsDir() && have.IsDir():
		return x.merge(content, name, overwrite)
	case got.IsDir() || have.IsDir():
		return nil, refuse("hostPath", "%s is %s, and the download is %s", name, describeType(have.Mode()), describeType(got.Mode()))
	case !overwrite:
		return nil, refuse("hostPath", "%s exists: set overwrite to replace it", name)
	}
	return nil, x.hostErr(x.root.Rename(content, name))
}

// merge moves the tree src into the existing directory dst, after making
// sure it can: that no directory of it would go through a link or over a
// file, and that it replaces files only with overwrite.
func (x *extractor) merge(src, dst string, overwrite bool) (map[string]bool, error) {
	var c conflicts
	if err := x.conflicts(src, dst, "", &c); err != nil {
		return nil, err
	}
	if err := c.refusal(overwrite); err != nil {
		return nil, err
	}
	kept := map[string]bool{"": true}
	return kept, x.move(src, dst, "", kept)
}

// conflicts are the files a merge would replace.
type conflicts struct {
	n     int
	first []string
}

func (c *conflicts) add(rel string) {
	c.n++
	if len(c.first) < 5 {
		c.first = append(c.first, rel)
	}
}

func (c *conflicts) refusal(overwrite bool) error {
	if c.n == 0 || overwrite {
		return nil
	}
	return refuse("hostPath", "%d file(s) of the download exist there already (%s): set overwrite to replace them; nothing was written",
		c.n, strings.Join(c.first, ", "))
}

func (x *extractor) conflicts(src, dst, rel string, c *conflicts) error {
	entries, err := x.readDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		sub := path.Join(rel, e.Name())
		have, err := x.root.Lstat(path.Join(dst, e.Name()))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return x.hostErr(err)
		case e.IsDir() && have.IsDir():
			if err := x.conflicts(path.Join(src, e.Name()), path.Join(dst, e.Name()), sub, c); err != nil {
				return err
			}
		case e.IsDir() || have.IsDir():
			return refuse("hostPath", "%s is %s there, and the download's is %s; nothing was written", sub, describeType(have.Mode()), describeType(e.Type()))
		default:
			c.add(sub)
		}
	}
	return nil
}

func (x *extractor) move(src, dst, rel string, kept map[string]bool) error {
	entries, err := x.readDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		from, to := path.Join(src, e.Name()), path.Join(dst, e.Name())
		have, err := x.root.Lstat(to)
		if err == nil && e.IsDir() && have.IsDir() {
			kept[path.Join(rel, e.Name())] = true
			if err := x.move(from, to, path.Join(rel, e.Name()), kept); err != nil {
				return err
			}
			continue
		}
		if err := x.root.Rename(from, to); err != nil {
			return x.hostErr(err)
		}
	}
	return nil
}

func (x *extractor) readDir(dir string) ([]fs.DirEntry, error) {
	d, err := x.root.Open(dir)
	if err != nil {
		return nil, x.hostErr(err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	return entries, x.hostErr(err)
}

// applyDirs gives the directories the download made their modes and
// times, the deepest first (a directory's time changes as its entries
// are made).
func (x *extractor) applyDirs(name string, kept map[string]bool) error {
	rels := make([]string, 0, len(x.dirs))
	for rel := range x.dirs {
		if !kept[rel] {
			rels = append(rels, rel)
		}
	}
	slices.SortFunc(rels, func(a, b string) int { return cmp.Compare(depth(b), depth(a)) })
	for _, rel := range rels {
		meta, at := x.dirs[rel], filepath.FromSlash(path.Join(name, rel))
		if err := x.root.Chmod(at, meta.mode); err != nil {
			return x.hostErr(err)
		}
		if err := x.root.Chtimes(at, meta.mtime, meta.mtime); err != nil {
			return x.hostErr(err)
		}
	}
	return nil
}

func (x *extractor) hostErr(err error) error {
	if err == nil {
		return nil
	}
	return refuse("hostPath", "%v", err)
}

// depth is how deep rel is under the download's root ("" is 0).
func depth(rel string) int {
	if rel == "" {
		return 0
	}
	return strings.Count(rel, "/") + 1
}
