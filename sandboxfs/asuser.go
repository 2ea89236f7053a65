package sandboxfs

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"
)

// What is written into a sandbox must land only where its user may write:
// the engine's archive API extracts as root, and follows the links on its
// way, so a link the sandbox made (out -> /usr/local/bin) would put the
// user's file into root's directories, owned by the sandbox user
// (docs/security.md, Links on a write's way).
//
//   - In a running sandbox, what is written is extracted by tar running as
//     the sandbox user: the kernel follows the links as that user would, at
//     the moment it writes, and refuses what that user may not write. A
//     link that comes and goes while the write runs can lead nowhere
//     else.
//   - In a stopped sandbox nothing runs that could move a link, and no
//     command can run as its user: the archive API writes, and a path that
//     goes through a link is refused.

// execTimeout bounds the commands the files run in a running sandbox
// (rm -r of a large tree, find); an extraction runs as long as its stream.
const execTimeout = 5 * time.Minute

// maxStderr is how much of a command's error output is kept for its
// message.
const maxStderr = 64 << 10

// asUser says whether writes go through the sandbox user (the sandbox runs).
func (f *FS) asUser() bool { return f.opts.Running && f.opts.Exec != nil }

// untar extracts the archive r into dir as the sandbox user. tar keeps the
// entries' modes (-p) and times; the owner is the user who runs it.
func (f *FS) untar(ctx context.Context, dir string, r io.Reader) error {
	res, err := f.opts.Exec(ctx, Command{
		Argv:      []string{"tar", "-x", "-p", "--no-same-owner", "-f", "-", "-C", dir},
		Stdin:     r,
		MaxOutput: maxStderr,
	})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(string(bytes.ToValidUTF8(res.Stderr, []byte("?"))))
		return refuse("path", "the sandbox user could not write there (%s); nothing the sandbox user may not write was written", msg)
	}
	return nil
}

// refuseLinks refuses, in a stopped sandbox, a write to p whose way (p
// itself included) goes through a symbolic link. It stops at the first
// part of p that does not exist: what the write makes there is new.
func (f *FS) refuseLinks(ctx context.Context, p string) error {
	if f.asUser() {
		return nil
	}
	at := "/"
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if part == "" {
			continue
		}
		at = path.Join(at, part)
		st, ok, err := f.stat(ctx, at)
		if err != nil || !ok {
			return err
		}
		if st.Mode&fs.ModeSymlink != 0 {
			return refuse("path", "%s goes through %s, a symbolic link (to %s): a stopped sandbox's files are written as root, "+
				"which would follow it anywhere; start the sandbox, or name the path the link leads to", p, at, st.LinkTarget)
		}
	}
	return nil
}
