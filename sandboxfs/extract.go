package sandboxfs

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// maxDirs bounds the directories one download makes: their modes are
// applied at its end, so each costs a little memory until then.
const maxDirs = 250000

// contentName is where the download lands inside its temporary directory.
const contentName = "content"

// dirMeta is what a directory gets once the download is in place.
type dirMeta struct {
	mode  os.FileMode
	mtime time.Time
}

// extractor writes one archive from the sandbox into a temporary directory
// beside hostPath. Every entry must stay under the archive's root, go
// through no link, and be a directory, a file or a link; every path it
// makes is made new (O_EXCL), so nothing is written through anything.
type extractor struct {
	root     *os.Root // at hostPath's parent: nothing outside it is touched
	tmp      string   // the temporary directory's name in root
	rootName string   // the first component of every name in the archive
	dirs     map[string]dirMeta
	prog     *reporter
	buf      []byte
	space    *room // what it may still write (sparse.go)
}

// entryError is the refusal of an archive entry.
func entryError(name, format string, a ...any) error {
	return refuse("path", "the sandbox's archive has an entry %q that %s; nothing was written", name, fmt.Sprintf(format, a...))
}

// readAll extracts every entry of tr.
func (x *extractor) readAll(ctx context.Context, tr *tar.Reader) error {
	for {
		h, err := tr.Next()
		if err == io.EOF {
			if x.rootName == "" {
				return refuse("path", "the sandbox sent an empty archive")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the sandbox's archive: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := x.entry(tr, h); err != nil {
			return err
		}
	}
}

// entry extracts one entry.
func (x *extractor) entry(tr *tar.Reader, h *tar.Header) error {
	if h.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	rel, err := x.relName(h.Name)
	if err != nil {
		return err
	}
	if err := x.checkParent(h.Name, rel, h.Typeflag == tar.TypeDir); err != nil {
		return err
	}
	switch h.Typeflag {
	case tar.TypeDir:
		return x.dir(h, rel)
	case tar.TypeReg, tar.TypeRegA:
		return x.file(tr, h, rel)
	case tar.TypeSymlink:
		return x.symlink(h, rel)
	case tar.TypeLink:
		return x.hardLink(h, rel)
	}
	return entryError(h.Name, "is a %s: downloads carry files, directories and links only", typeName(h.Typeflag))
}

// relName checks a name from the archive and returns it relative to the
// archive's root ("" for the root itself).
func (x *extractor) relName(name string) (string, error) {
	switch {
	case len(name) > maxNameBytes:
		return "", entryError(name[:64]+"...", "has a name of %d bytes, more than %d", len(name), maxNameBytes)
	case strings.HasPrefix(name, "/"):
		return "", entryError(name, "has an absolute name")
	case runtime.GOOS == "windows" && strings.ContainsAny(name, `\:`):
		return "", entryError(name, `has a \ or : in its name, which Windows reads as a path`)
	}
	var parts []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "..":
			return "", entryError(name, "goes up with ..")
		case "", ".":
			continue
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "", entryError(name, "has no name")
	}
	if x.rootName == "" {
		x.rootName = parts[0]
	}
	if parts[0] != x.rootName {
		return "", entryError(name, "is not under the archive's root %q", x.rootName)
	}
	return path.Join(parts[1:]...), nil
}

// checkParent makes sure the entry's directory is one this download made:
// never a link, never something that was there before.
func (x *extractor) checkParent(name, rel string, isDir bool) error {
	if rel == "" {
		if _, seen := x.dirs[""]; seen && !isDir {
			return entryError(name, "names the archive's root again")
		}
		return nil
	}
	parent := path.Dir(rel)
	if parent == "." {
		parent = ""
	}
	if _, ok := x.dirs[parent]; !ok {
		return entryError(name, "is not inside a directory of the archive (its directory is missing or a link)")
	}
	return nil
}

// at is where rel lands in root.
func (x *extractor) at(rel string) string {
	return filepath.FromSlash(path.Join(x.tmp, contentName, rel))
}

func (x *extractor) dir(h *tar.Header, rel string) error {
	meta := dirMeta{mode: os.FileMode(h.Mode) & os.ModePerm, mtime: h.ModTime}
	if _, ok := x.dirs[rel]; ok {
		x.dirs[rel] = meta // a repeated entry: the last one counts
		return nil
	}
	if len(x.dirs) >= maxDirs {
		return entryError(h.Name, "is one directory more than the %d one download may make", maxDirs)
	}
	// Private until the end: a directory without write permission for
	// its owner could not be filled, nor moved into place.
	if err := x.root.Mkdir(x.at(rel), 0o700); err != nil {
		return x.hostError(h.Name, err)
	}
	x.dirs[rel] = meta
	return nil
}

func (x *extractor) file(tr *tar.Reader, h *tar.Header, rel string) error {
	out, err := x.root.OpenFile(x.at(rel), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return x.hostError(h.Name, err)
	}
	n, err := writeSparse(out, tr, h.Size, x.buf, x.space)
	if err == nil {
		// The mode without setuid, setgid or sticky: a download must not
		// plant a setuid program on the host.
		err = out.Chmod(os.FileMode(h.Mode) & os.ModePerm)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = x.root.Chtimes(x.at(rel), h.ModTime, h.ModTime)
	}
	var refused *FieldError
	if errors.As(err, &refused) {
		return err
	}
	if err != nil {
		return x.hostError(h.Name, err)
	}
	x.prog.add(1, n)
	return nil
}

func (x *extractor) symlink(h *tar.Header, rel string) error {
	switch {
	case rel == "":
		return entryError(h.Name, "is a link at the archive's root")
	case h.Linkname == "" || len(h.Linkname) > maxNameBytes:
		return entryError(h.Name, "is a link with a target of %d bytes", len(h.Linkname))
	case path.IsAbs(h.Linkname) || filepath.IsAbs(h.Linkname):
		return entryError(h.Name, "is a link to the absolute path %q, which would lead out of hostPath", h.Linkname)
	}
	// Where it leads is checked once the whole tree is there (links may
	// lead through later entries): see checkLinks.
	if err := x.root.Symlink(filepath.FromSlash(h.Linkname), x.at(rel)); err != nil {
		return x.hostError(h.Name, err)
	}
	x.prog.add(1, 0)
	return nil
}

// hardLink links to a file this archive made before: the engine's
// archives carry a file with several names once, then links to it.
func (x *extractor) hardLink(h *tar.Header, rel string) error {
	if rel == "" {
		return entryError(h.Name, "is a hard link at the archive's root")
	}
	target, err := x.relName(h.Linkname)
	if err == nil && target != "" {
		err = x.checkParent(h.Linkname, target, false)
	}
	if err != nil {
		return entryError(h.Name, "is a hard link to %q, which is not a file of the archive", h.Linkname)
	}
	info, err := x.root.Lstat(x.at(target))
	if err != nil || !info.Mode().IsRegular() {
		return entryError(h.Name, "is a hard link to %q, which is not a file of the archive", h.Linkname)
	}
	if err := x.root.Link(x.at(target), x.at(rel)); err != nil {
		return x.hostError(h.Name, err)
	}
	x.prog.add(1, 0)
	return nil
}

// hostError is a failure to write on the host: a duplicate entry, a full
// disk, no permission.
func (x *extractor) hostError(name string, err error) error {
	if errors.Is(err, os.ErrExist) {
		return entryError(name, "comes twice")
	}
	return refuse("hostPath", "writing %s: %v; nothing was written", name, err)
}

func typeName(flag byte) string {
	switch flag {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "named pipe"
	}
	return fmt.Sprintf("entry of type %q", flag)
}
