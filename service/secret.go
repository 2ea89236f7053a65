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

// startGuardAside starts the guard while the desktop starts (it needs only
// a running container, and its exec takes about 50 ms, which the start no
// longer waits for in turn); the function returned waits for it.
func (m *Manager) startGuardAside(ctx context.Context, c Container) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.startGuard(ctx, c)
	}()
	return func() { <-done }
}

// startGuard starts pilot-pidguard as the sandbox user in a container whose
// desktop runs as a user of its own (which could not signal a flood of the
// sandbox user's); older images start it from their entrypoint. A sandbox
// without it still has its process limit, so a failure is only logged.
func (m *Manager) startGuard(ctx context.Context, c Container) {
	if user, _ := desktopUserOf(c); user == desktop.User {
		return
	}
	res, err := m.docker.Exec(ctx, c.ID, ExecSpec{
		Cmd: desktop.GuardCommand, User: desktop.User, Timeout: 10 * time.Second, MaxOutput: 4096,
	})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit code %d: %s", res.ExitCode, res.Stderr)
	}
	if err != nil {
		m.log.Warn().Err(err).Str("container", c.ID).Msg("could not start pilot-pidguard; fork floods will hold the sandbox's process slots")
	}
}
