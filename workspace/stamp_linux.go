//go:build linux

package workspace

import (
	"io/fs"
	"syscall"
)

// sysStamp is a file's change time and inode number: a content change that
// keeps the modification time (cp -p, tar) still changes these.
func sysStamp(info fs.FileInfo) (ctime int64, ino uint64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ctim.Nano(), st.Ino
}
