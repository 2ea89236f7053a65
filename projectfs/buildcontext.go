package projectfs

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// A project Dockerfile and its build context come with the repository, so
// they are read the way .pilot is: beneath a handle on the project
// (os.Root), only directories and regular files, no link followed, and
// bounded in size. The archive built here is the one the engine gets, and
// the one the digest the user approved is taken over: what is approved is
// exactly what is built, whatever changes on the disk in between.

// Bounds of a project's build context: a Dockerfile's directory is meant to
// hold the Dockerfile and the few files it copies, not a whole tree.
const (
	MaxContextBytes = 64 << 20
	MaxContextFiles = 10000
)

// BuildContext is a project Dockerfile with its build context, packed.
type BuildContext struct {
	// Dockerfile is its path relative to the project (.pilot/Dockerfile),
	// Dir the context's (.pilot), Name the Dockerfile's within it.
	Dockerfile, Dir, Name string
	// Tar is the context as a tar archive.
	Tar []byte
	// Digest is "sha256:HEX" over Name and Tar: every byte of the
	// Dockerfile and its context.
	Digest string
	// DockerfileSize, Files and Bytes describe it, for a summary.
	DockerfileSize int64
	Files          int
	Bytes          int64
}

// sidecarFiles are the files of .pilot that the sidecar and the app write
// (and their temporary and set-aside copies): they change at every start
// or switch of the agent tools, or appear at the first (.gitignore), so
// they are left out of a context that holds them, which would otherwise
// ask for approval again each time.
func sidecarFile(rel string) bool {
	dir, name := path.Split(rel)
	if dir != Dir+"/" {
		return false
	}
	for _, own := range []string{recordName, settingsName, gitignoreName} {
		if name == own || strings.HasPrefix(name, tempPrefix(own)) || strings.HasPrefix(name, own+".corrupt-") {
			return true
		}
	}
	return false
}

// ReadBuildContext reads the project Dockerfile at dockerfile (relative to
// the project, checked by ReadConfig) and its directory as the build
// context. A link, a device or a pipe on the way or in the context, or a
// context over MaxContextBytes or MaxContextFiles, is a ConfigError naming
// sandbox.image; a Dockerfile that is missing too.
func ReadBuildContext(project, dockerfile string) (BuildContext, error) {
	fail := func(format string, a ...any) (BuildContext, error) {
		return BuildContext{}, &ConfigError{File: SettingsFile(project), Field: "sandbox.image", Reason: fmt.Sprintf(format, a...)}
	}
	if reason := checkDockerfilePath(dockerfile); reason != "" {
		return fail("names the Dockerfile %q, which %s", dockerfile, reason)
	}
	root, err := os.OpenRoot(project)
	if err != nil {
		return BuildContext{}, err
	}
	defer root.Close()
	dir, name := path.Split(dockerfile)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	if why := noLinkOnTheWay(root, dockerfile); why != "" {
		return fail("names the Dockerfile %s: %s", dockerfile, why)
	}
	p := packer{root: root, base: dir}
	if err := p.walk(dir); err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return fail("names the Dockerfile %s, whose build context %s cannot be used: %s", dockerfile, dir, r.why)
		}
		return BuildContext{}, fmt.Errorf("read the build context %s: %w", dir, err)
	}
	size, ok := p.sizes[name]
	if !ok {
		return fail("names the Dockerfile %s, which is not a regular file of the project", dockerfile)
	}
	if size > MaxFileSize {
		return fail("names the Dockerfile %s, which is %s, larger than %s", dockerfile, sizeOf(size), sizeOf(MaxFileSize))
	}
	tarball, err := p.pack()
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return fail("names the Dockerfile %s, whose build context %s cannot be used: %s", dockerfile, dir, r.why)
		}
		return BuildContext{}, fmt.Errorf("pack the build context %s: %w", dir, err)
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "dockerfile\x00%s\x00", name)
	sum.Write(tarball)
	return BuildContext{
		Dockerfile: dockerfile, Dir: dir, Name: name, Tar: tarball,
		Digest:         "sha256:" + hex.EncodeToString(sum.Sum(nil)),
		DockerfileSize: size, Files: len(p.files), Bytes: p.total,
	}, nil
}

// noLinkOnTheWay says why a path of the project may not be followed (a
// link in one of its parts), or "".
func noLinkOnTheWay(root *os.Root, rel string) string {
	parts := strings.Split(rel, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		info, err := root.Lstat(sub)
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist):
			return sub + " does not exist"
		case err != nil:
			return err.Error()
		case info.Mode()&fs.ModeSymlink != 0:
			return sub + " is a symbolic link" + linkTarget(root, sub)
		}
	}
	return ""
}

// packer collects a build context's entries, then packs them.
type packer struct {
	root  *os.Root
	base  string           // the context directory, relative to the project
	dirs  []string         // relative to base
	files []string         // relative to base
	sizes map[string]int64 // relative to base
	infos map[string]fs.FileInfo
	total int64
}

// walk lists dir (relative to the project) and what is beneath it.
func (p *packer) walk(dir string) error {
	if p.sizes == nil {
		p.sizes, p.infos = map[string]int64{}, map[string]fs.FileInfo{}
	}
	f, err := p.root.Open(dir)
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		rel := path.Join(dir, e.Name())
		if sidecarFile(rel) {
			continue
		}
		if err := p.add(rel); err != nil {
			return err
		}
	}
	return nil
}

// add takes one entry of the context, descending into a directory.
func (p *packer) add(rel string) error {
	info, err := p.root.Lstat(rel)
	if err != nil {
		return err
	}
	name := p.inContext(rel)
	mode := info.Mode()
	switch {
	case mode.IsDir():
		p.dirs = append(p.dirs, name)
		return p.walk(rel)
	case mode&fs.ModeSymlink != 0:
		return &refusal{rel + " is a symbolic link" + linkTarget(p.root, rel)}
	case !mode.IsRegular():
		return &refusal{rel + " is " + kindOf(mode)}
	}
	p.files = append(p.files, name)
	p.sizes[name], p.infos[name] = info.Size(), info
	p.total += info.Size()
	switch {
	case len(p.files) > MaxContextFiles:
		return &refusal{fmt.Sprintf("it has more than %d files", MaxContextFiles)}
	case p.total > MaxContextBytes:
		return &refusal{fmt.Sprintf("it holds more than %s", sizeOf(MaxContextBytes))}
	}
	return nil
}

func (p *packer) inContext(rel string) string {
	if p.base == "." {
		return rel
	}
	return strings.TrimPrefix(rel, p.base+"/")
}

func (p *packer) inProject(name string) string { return path.Join(p.base, name) }

// pack writes the entries, sorted, with nothing of the host in their
// headers (times, owners), so that equal contents give equal archives.
func (p *packer) pack() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := slices.Concat(p.dirs, p.files)
	slices.Sort(names)
	for _, name := range names {
		info, isFile := p.infos[name]
		hdr := &tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)}
		if isFile {
			hdr = &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: int64(info.Mode().Perm()), Size: info.Size(), ModTime: time.Unix(0, 0)}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if isFile {
			if err := p.copyFile(tw, name, info); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// copyFile writes one file of the context: the one listed, of the size
// listed (a file changed since is a refusal rather than a short archive).
func (p *packer) copyFile(w io.Writer, name string, listed fs.FileInfo) error {
	rel := p.inProject(name)
	f, err := p.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(opened, listed) || !opened.Mode().IsRegular() || opened.Size() != listed.Size() {
		return &refusal{rel + " changed while it was read"}
	}
	n, err := io.Copy(w, io.LimitReader(f, listed.Size()))
	if err == nil && n != listed.Size() {
		return &refusal{rel + " changed while it was read"}
	}
	return err
}
