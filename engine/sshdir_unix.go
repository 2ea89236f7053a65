//go:build unix

package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sshDir is the user's own directory for the ssh master's control socket
// and the forwarded engine socket (whoever can open that socket holds
// the remote engine): $XDG_RUNTIME_DIR/pilot-sandbox, or, where there is
// none, /tmp/pilot-sandbox-UID (not $TMPDIR: macOS's is long, and a
// socket's path has at most 104 bytes). It must be a directory of the
// user's, with no access for anyone else, or nothing is put there.
func sshDir() (string, error) {
	uid := os.Getuid()
	dir := filepath.Join("/tmp", "pilot-sandbox-"+strconv.Itoa(uid))
	if base := os.Getenv("XDG_RUNTIME_DIR"); base != "" && filepath.IsAbs(base) && len(base) < 48 && !strings.ContainsAny(base, " \t\"'") {
		dir = filepath.Join(base, "pilot-sandbox")
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("the directory for ssh's sockets: %w", err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("the directory for ssh's sockets: %w", err)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !info.IsDir() || !ok || int(st.Uid) != uid || info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is not a directory of this user's that only it can open: remove it, and pilot-sandbox makes it again", dir)
	}
	return dir, nil
}
