package sandboxfs

import (
	"archive/tar"
	"io/fs"
	"path"
	"time"
)

// Types of an Entry.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// Entry is a file in the sandbox as list and stat describe it. Size is a
// file's length, a link's target's length, and 0 for a directory; Mode
// has the Unix permission bits (with setuid, setgid and sticky);
// ModifiedAt is in milliseconds, to the second.
type Entry struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Size       int64  `json:"size"`
	Mode       int    `json:"mode"`
	ModifiedAt int64  `json:"modifiedAt"`
}

// entryOfStat is an Entry from the engine's stat header, whose mode is
// Go's fs.FileMode.
func entryOfStat(st PathStat) Entry {
	e := Entry{Name: st.Name, Size: st.Size, Mode: unixPerm(st.Mode), ModifiedAt: millis(st.Mtime)}
	switch {
	case st.Mode.IsDir():
		e.Type, e.Size = TypeDir, 0
	case st.Mode&fs.ModeSymlink != 0:
		e.Type = TypeSymlink
	case st.Mode.IsRegular():
		e.Type = TypeFile
	default:
		e.Type = TypeOther
	}
	return e
}

// entryOfHeader is an Entry from a tar header, whose mode has the Unix
// bits.
func entryOfHeader(h *tar.Header) Entry {
	e := Entry{Name: path.Base(h.Name), Size: h.Size, Mode: int(h.Mode & 0o7777), ModifiedAt: millis(h.ModTime)}
	switch h.Typeflag {
	case tar.TypeDir:
		e.Type, e.Size = TypeDir, 0
	case tar.TypeSymlink:
		e.Type, e.Size = TypeSymlink, int64(len(h.Linkname))
	case tar.TypeReg, tar.TypeLink:
		e.Type = TypeFile
	default:
		e.Type = TypeOther
	}
	return e
}

// unixPerm turns Go's permission, setuid, setgid and sticky bits into
// Unix's.
func unixPerm(m fs.FileMode) int {
	p := int(m.Perm())
	if m&fs.ModeSetuid != 0 {
		p |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		p |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		p |= 0o1000
	}
	return p
}

// millis is a modification time to the second: the archive of a stopped
// sandbox's directory has no finer times, and a listing must not change
// with the sandbox's state.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Truncate(time.Second).UnixMilli()
}
