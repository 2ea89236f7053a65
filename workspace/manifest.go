package workspace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// The manifest says what a container's /workspace holds: for each file,
// the host stat it was sent with and its git blob id; and the base commit
// of that sync. A file whose stat has not changed is not read again; one
// whose stat changed is hashed, and sent only if its blob id did.
//
// It is a text file in the user's state (workspaces/CONTAINER.manifest):
// a first line "pilot-workspace-manifest 1 BASE", then one line a file,
// "BLOB SIZE MTIME CTIME INODE MODE PATH" (numbers in decimal, MODE that
// of Go's fs.FileMode, PATH Go-quoted so any byte survives). It streams
// both ways: 100,000 files are about 12 MB of text, never a second copy
// in memory.

const manifestMagic = "pilot-workspace-manifest 1"

// maxManifestLine bounds a line of the manifest (a path up to PATH_MAX,
// quoted).
const maxManifestLine = 64 << 10

// entry is what the manifest keeps of a file.
type entry struct {
	blob  string // git blob id of its content (a link's: its target)
	stamp stamp
}

// manifest is a container's workspace as the last sync left it.
type manifest struct {
	base  string
	files map[string]entry
}

func manifestDir(stateDir string) string { return filepath.Join(stateDir, "workspaces") }

func manifestName(container string) string { return container + ".manifest" }

// loadManifest reads the container's manifest; a missing or unreadable
// one is an empty manifest (the next sync sends everything).
func loadManifest(stateDir, container string) *manifest {
	empty := &manifest{files: map[string]entry{}}
	f, err := projectfs.OpenStateFile(manifestDir(stateDir), manifestName(container))
	if err != nil {
		return empty
	}
	defer f.Close()
	m, err := readManifest(f)
	if err != nil {
		return empty
	}
	return m
}

// loadBase reads only the manifest's base (its first line): "" when there
// is none.
func loadBase(stateDir, container string) string {
	f, err := projectfs.OpenStateFile(manifestDir(stateDir), manifestName(container))
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(f, 256), 256).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), manifestMagic+" ")
	if err != nil || !ok {
		return ""
	}
	return base
}

func readManifest(r io.Reader) (*manifest, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxManifestLine)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), manifestMagic+" ") {
		return nil, errors.New("not a workspace manifest")
	}
	m := &manifest{base: strings.TrimPrefix(sc.Text(), manifestMagic+" "), files: map[string]entry{}}
	for sc.Scan() {
		rel, e, err := parseManifestLine(sc.Text())
		if err != nil {
			return nil, err
		}
		m.files[rel] = e
	}
	return m, sc.Err()
}

func parseManifestLine(line string) (string, entry, error) {
	f := strings.SplitN(line, " ", 7)
	if len(f) != 7 {
		return "", entry{}, fmt.Errorf("a manifest line has %d fields", len(f))
	}
	var n [5]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return "", entry{}, err
		}
		n[i] = v
	}
	rel, err := strconv.Unquote(f[6])
	if err != nil {
		return "", entry{}, err
	}
	return rel, entry{blob: f[0], stamp: stamp{size: n[0], mtime: n[1], ctime: n[2], ino: uint64(n[3]), mode: fs.FileMode(n[4])}}, nil
}

// saveManifest replaces the container's manifest.
func saveManifest(stateDir, container string, m *manifest) error {
	return projectfs.WriteStateFile(manifestDir(stateDir), manifestName(container), func(w io.Writer) error {
		if _, err := fmt.Fprintf(w, "%s %s\n", manifestMagic, m.base); err != nil {
			return err
		}
		for rel, e := range m.files {
			s := e.stamp
			if _, err := fmt.Fprintf(w, "%s %d %d %d %d %d %s\n", e.blob, s.size, s.mtime, s.ctime, s.ino, uint32(s.mode), strconv.Quote(rel)); err != nil {
				return err
			}
		}
		return nil
	})
}
