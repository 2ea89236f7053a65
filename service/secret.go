package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// LabelVNCDir is the image label (inherited by its containers) naming the
// directory the VNC password file goes into. Images without it keep the
// file in the sandbox user's ~/.vnc.
const LabelVNCDir = "pilot.sandbox.vnc-dir"

// LabelDesktopUser is the image label (inherited by its containers) naming
// the user the desktop runs as, when it is not the sandbox user that every
// exec runs as (desktop.DesktopUser). Containers of older images have none:
// their desktop, agent and execs share desktop.User.
const LabelDesktopUser = "pilot.sandbox.desktop-user"

// desktopUserOf is the user that runs c's desktop and its agent, and the
// group that may read its VNC passwords.
func desktopUserOf(c Container) (user string, gid int) {
	if c.Labels[LabelDesktopUser] == desktop.DesktopUser {
		return desktop.DesktopUser, desktop.DesktopGID
	}
	return desktop.User, desktop.UID
}

// passwdDir is where the container's desktop reads its VNC passwords, and
// whether that is the legacy place, which the sandbox user owns.
func passwdDir(c Container) (dir string, legacy bool) {
	if dir := c.Labels[LabelVNCDir]; strings.HasPrefix(dir, "/") {
		return dir, false
	}
	return desktop.LegacyVNCDir, true
}

func passwdPath(c Container) string {
	dir, _ := passwdDir(c)
	return dir + "/passwd"
}

// secretFor returns the VNC passwords of a running container: remembered
// for this run of it, or read back from the container (after the sidecar
// restarted, or another process started it).
func (m *Manager) secretFor(ctx context.Context, b *box, c Container) (desktop.Secret, error) {
	r := b.runOf(c)
	b.mu.Lock()
	s := r.secret
	b.mu.Unlock()
	if s != (desktop.Secret{}) {
		return s, nil
	}
	user, _ := desktopUserOf(c)
	res, err := m.docker.Exec(ctx, c.ID, ExecSpec{
		Cmd: []string{"cat", passwdPath(c)}, User: user, Timeout: 10 * time.Second, MaxOutput: 4096,
	})
	if err != nil {
		return desktop.Secret{}, fmt.Errorf("read VNC password: %w", err)
	}
	s, ok := desktop.ParsePasswdFile(string(res.Stdout))
	if res.ExitCode != 0 || !ok {
		return desktop.Secret{}, errors.New("the sandbox has no VNC password file")
	}
	b.mu.Lock()
	r.secret = s
	b.mu.Unlock()
	return s, nil
}
