package sandboxfs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxListEntries bounds one listing: a directory with more lists its
// first ones, with Truncated set.
const MaxListEntries = 50000

// Listing is a directory's entries (not sorted).
type Listing struct {
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated"`
}

// List describes what the directory p holds, following links to it. On a
// running sandbox it asks find(1): the archive API can only send the whole
// tree under p, which is what a stopped sandbox costs.
func (f *FS) List(ctx context.Context, p string) (Listing, error) {
	p, err := Resolve("path", p)
	if err != nil {
		return Listing{}, err
	}
	real, st, ok, err := f.follow(ctx, p)
	switch {
	case err != nil:
		return Listing{}, err
	case !ok:
		return Listing{}, &NotFoundError{Path: p}
	case !st.Mode.IsDir():
		return Listing{}, refuse("path", "%s is %s, not a directory", p, describeType(st.Mode))
	}
	if f.opts.Running && f.opts.Exec != nil {
		// A sandbox that stopped meanwhile, or a directory its user may
		// not read, is listed from the archive instead.
		if l, err := f.listByFind(ctx, real); err == nil {
			return l, nil
		}
	}
	return f.listByArchive(ctx, real)
}

// findFormat prints type, size, mode, mtime and name, NUL-terminated:
// a name may hold any byte but NUL and '/'.
const findFormat = `%y %s %m %T@ %f\0`

func (f *FS) listByFind(ctx context.Context, dir string) (Listing, error) {
	const maxOutput = 16 << 20
	res, err := f.opts.Exec(ctx, Command{
		Argv:      []string{"find", dir, "-mindepth", "1", "-maxdepth", "1", "-printf", findFormat},
		MaxOutput: maxOutput,
		Timeout:   execTimeout,
	})
	if err != nil {
		return Listing{}, err
	}
	if res.ExitCode != 0 {
		return Listing{}, fmt.Errorf("find: exit %d: %s", res.ExitCode, bytes.TrimSpace(res.Stderr))
	}
	records := bytes.Split(res.Stdout, []byte{0})
	// The last record is what follows the last NUL: empty, or cut short.
	l := Listing{Entries: []Entry{}, Truncated: res.Truncated}
	for _, rec := range records[:len(records)-1] {
		if len(l.Entries) == MaxListEntries {
			l.Truncated = true
			break
		}
		e, err := parseFind(string(rec))
		if err != nil {
			return Listing{}, err
		}
		l.Entries = append(l.Entries, e)
	}
	return l, nil
}

// parseFind reads one record of findFormat.
func parseFind(rec string) (Entry, error) {
	fields := strings.SplitN(rec, " ", 5)
	if len(fields) != 5 {
		return Entry{}, fmt.Errorf("find printed %q", rec)
	}
	size, err1 := strconv.ParseInt(fields[1], 10, 64)
	mode, err2 := strconv.ParseInt(fields[2], 8, 32)
	secs, err3 := strconv.ParseFloat(fields[3], 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Entry{}, fmt.Errorf("find printed %q: %w", rec, err)
	}
	e := Entry{Name: fields[4], Size: size, Mode: int(mode), ModifiedAt: int64(secs) * 1000}
	switch fields[0] {
	case "f":
		e.Type = TypeFile
	case "d":
		e.Type, e.Size = TypeDir, 0
	case "l":
		e.Type = TypeSymlink
	default:
		e.Type = TypeOther
	}
	return e, nil
}

// listByArchive reads the headers of the tree's archive and keeps the
// entries right under its root.
func (f *FS) listByArchive(ctx context.Context, dir string) (Listing, error) {
	rc, err := f.docker.DownloadArchive(ctx, f.id, dir)
	if err != nil {
		return Listing{}, err
	}
	defer rc.Close()
	l := Listing{Entries: []Entry{}}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return l, nil
		}
		if err != nil {
			return Listing{}, fmt.Errorf("read archive of %s: %w", dir, err)
		}
		if strings.Count(strings.TrimSuffix(h.Name, "/"), "/") != 1 || len(h.Name) > maxNameBytes {
			continue // the root, or deeper down
		}
		if len(l.Entries) == MaxListEntries {
			l.Truncated = true
			return l, nil
		}
		l.Entries = append(l.Entries, entryOfHeader(h))
	}
}
