package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestExecCannotTouchTheDesktop tries, from an exec, what code in the
// sandbox did to the desktop in issue 16 (kill it, stop its entrypoint,
// read or write its processes' file descriptors): each attempt fails, and
// the user sees no change: the sandbox runs, its viewer answers (the
// sidecar's own page), screenshots work. The sandbox user keeps the
// display, through its cookie only.
func TestExecCannotTouchTheDesktop(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Screenshot(ctx, dir); err != nil { // the agent runs
		t.Fatal(err)
	}
	for _, tc := range []struct{ attack, command string }{
		{"kill -9 -1", `kill -9 -1`},
		{"pkill -u desktop", `pkill -KILL -u desktop; pkill -u desktop; pgrep -u desktop >/dev/null`},
		{"kill -STOP the entrypoint", `for p in $(pgrep -u desktop -x pilot-desktop); do kill -STOP $p || exit 0; done; exit 1`},
		{"read Xvfb's fds", `ls /proc/$(pgrep -u desktop -x Xvfb)/fd/ 2>&1 | grep -q denied`},
		{"write into the agent's pipe", `p=$(pgrep -u desktop -x python3 | head -1); [ -n "$p" ] || exit 1
			head -c 1000000 /dev/zero | tr '\0' x > /proc/$p/fd/1 && exit 1; exit 0`},
		{"trace Xvfb", `python3 -c 'import ctypes, subprocess, sys
pid = int(subprocess.check_output(["pgrep", "-u", "desktop", "-x", "Xvfb"]))
sys.exit(0 if ctypes.CDLL(None, use_errno=True).ptrace(16, pid, 0, 0) == -1 else 1)'`},
	} {
		t.Run(tc.attack, func(t *testing.T) {
			if out := exec(t, m, dir, tc.command); out.ExitCode != 0 && tc.attack != "kill -9 -1" {
				t.Errorf("the attack did not fail as it should (exit code %d): %s%s", out.ExitCode, out.Stdout, out.Stderr)
			}
			if stopped := asUser(t, docker, st.ContainerID, "root", `ps -o stat= -u desktop | grep -c '^T' || true`); stopped != "0\n" {
				t.Errorf("%s desktop processes stopped", strings.TrimSpace(stopped))
			}
			assertDesktopWorks(t, m, dir, st)
		})
	}
	display := exec(t, m, dir, `xdpyinfo >/dev/null && echo cookie; XAUTHORITY=/dev/null xdpyinfo >/dev/null 2>&1 || echo without`)
	if display.Stdout != "cookie\nwithout\n" {
		t.Errorf("the sandbox's X clients: %q, want the display with the cookie only", display.Stdout)
	}
}

// asUser runs a shell command in the container as user, past the sidecar,
// as only the test (or the engine's owner) can.
func asUser(t *testing.T, docker service.Docker, id, user, command string) string {
	t.Helper()
	res, err := docker.Exec(context.Background(), id, service.ExecSpec{
		Cmd: []string{"sh", "-c", command}, User: user, Timeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Stdout)
}

// TestAFakeViewerIsRefused: with websockify gone (a crash; the sandbox user
// can no longer kill it, so the test kills it as the desktop user), a
// program of the sandbox's serves its own viewer page on the noVNC port,
// through a real websockify so that the desktop still answers. The
// sidecar must not give the panel that page's address: the start of a
// sidecar that finds the sandbox says why, and the state is an error.
func TestAFakeViewerIsRefused(t *testing.T) {
	first, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := first.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Freeze websockify's supervisor (its parent), so that it does not
	// start another, then end websockify: the port is free. The oldest
	// websockify listens; younger ones serve a connection each (the
	// readiness probe's may not have ended yet).
	asUser(t, docker, st.ContainerID, "desktop", `w=$(pgrep -o -x websockify); s=$(ps -o ppid= -p $w); kill -STOP $s; kill $w
		for i in $(seq 100); do pgrep -x websockify >/dev/null || break; sleep 0.1; done`)
	fake := `cp -r /usr/share/novnc /tmp/fake &&
		sed -i 's|<title>|<form>Sign in to continue</form><title>|' /tmp/fake/pilot/viewer.html &&
		setsid websockify --web /tmp/fake 6080 127.0.0.1:5900 </dev/null >/dev/null 2>&1 &`
	exec(t, first, dir, fake)
	if !pollUntil(t, "the fake viewer is served", func() bool {
		return strings.Contains(exec(t, first, dir, `python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:6080/pilot/viewer.html").read().decode())' 2>/dev/null`).Stdout, "Sign in")
	}) {
		return
	}
	if err := desktop.Probe(ctx, "127.0.0.1", st.WSPort, viewerPage); err == nil || !strings.Contains(err.Error(), "viewer.html differs") {
		t.Errorf("probe of the fake viewer: %v", err)
	}
	second, _ := dockertest.Manager(t, nil)
	got, err := second.Start(ctx, dir)
	if err == nil || !strings.Contains(err.Error(), desktop.ErrViewerMismatch.Error()) || got.ViewerURL != "" {
		t.Errorf("a start over the fake viewer: %+v, %v", got, err)
	}
	if s, err := second.Status(ctx, dir); err != nil || s.Status == service.StatusRunning || s.ViewerURL != "" {
		t.Errorf("state over the fake viewer: %+v, %v", s, err)
	}
}
