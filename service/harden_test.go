package service_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// upgrade asks websockify on port for a WebSocket with these Host and
// Origin headers ("" leaves Origin out) and returns the status.
func upgrade(t *testing.T, port int, host, origin string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/websockify", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	req.Header.Set("Sec-WebSocket-Protocol", "binary")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("upgrade with Host %s, Origin %q: %v", host, origin, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestViewerServesOnlyItsOwnOrigin: a page of another origin (a site, or
// another local app on 127.0.0.1) cannot open the desktop's WebSocket
// through the user's browser, nor a page that rebound its DNS name to
// 127.0.0.1 (Host evil.example:PORT); the viewer's own origin can, and so
// can a client that sends no Origin (the readiness probe). No directory of
// the web root is listed.
func TestViewerServesOnlyItsOwnOrigin(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	port := st.WSPort
	own := fmt.Sprintf("127.0.0.1:%d", port)
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"the viewer's own origin", own, "http://" + own, http.StatusSwitchingProtocols},
		{"localhost, its own origin", fmt.Sprintf("localhost:%d", port), fmt.Sprintf("http://localhost:%d", port), http.StatusSwitchingProtocols},
		{"no Origin (not a browser)", own, "", http.StatusSwitchingProtocols},
		{"a site", own, "http://evil.example", http.StatusForbidden},
		{"another local app", own, "http://127.0.0.1:3000", http.StatusForbidden},
		{"another name for the viewer", own, fmt.Sprintf("http://localhost:%d", port), http.StatusForbidden},
		{"an opaque origin", own, "null", http.StatusForbidden},
		{"DNS rebinding", fmt.Sprintf("evil.example:%d", port), fmt.Sprintf("http://evil.example:%d", port), http.StatusForbidden},
		{"DNS rebinding, no Origin", fmt.Sprintf("evil.example:%d", port), "", http.StatusForbidden},
	} {
		if got := upgrade(t, port, tc.host, tc.origin); got != tc.want {
			t.Errorf("%s (Host %s, Origin %q): %d, want %d", tc.name, tc.host, tc.origin, got, tc.want)
		}
	}
	for _, path := range []string{"/", "/pilot/", "/app/"} {
		resp, err := http.Get(fmt.Sprintf("http://%s%s", own, path))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(string(body), "href=") {
			t.Errorf("GET %s lists the directory: %s\n%.300s", path, resp.Status, body)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/%s", own, viewerPage), nil)
	req.Host = fmt.Sprintf("evil.example:%d", port)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("the viewer page under a rebound name: %v %v, want 403", resp.Status, err)
	}
	assertDesktopWorks(t, m, dir, st)
}

// TestAKilledPidguardIsReplaced: the sandbox user kills pilot-pidguard (its
// own user's process, so it can). The sidecar starts another, which ends a
// fork flood started next, and the sandbox works again. (A guard killed in
// the same breath as a flood starts is not replaced: no exec can start in
// a flood; README, What a sandbox is.)
func TestAKilledPidguardIsReplaced(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	api := dockertest.NewAPI(t)
	dir := dockertest.Project(t, docker)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// The pattern does not match the shell that runs it.
	guard := func() string { return exec(t, m, dir, "pgrep -f 'pilot-[p]idguard'").Stdout }
	var first string
	if !pollUntil(t, "pilot-pidguard runs", func() bool { first = guard(); return first != "" }) {
		return
	}
	if out := exec(t, m, dir, `pkill -KILL -f 'pilot-[p]idguard'`); out.ExitCode != 0 {
		t.Fatalf("the sandbox user could not kill the guard: %+v", out)
	}
	if !pollUntil(t, "another pilot-pidguard runs", func() bool { g := guard(); return g != "" && g != first }) {
		return
	}
	baseline := api.Stats(st.ContainerID).Pids
	limit := service.DefaultLimits.PidsLimit
	exec(t, m, dir, `bomb() { bomb | bomb & }; bomb >/dev/null 2>&1`)
	if !pollUntil(t, "the flood fills the process slots", func() bool {
		return api.Stats(st.ContainerID).Pids >= limit-limit/16
	}) {
		return
	}
	pollUntil(t, "the flood's processes are gone", func() bool {
		return api.Stats(st.ContainerID).Pids <= baseline+2
	})
	log := exec(t, m, dir, "cat /tmp/pilot-pidguard.log").Stdout
	// The first guard was killed before the flood, so the one that ended
	// it is a replacement. (The first may have logged to its exec instead:
	// it starts beside the desktop, while /tmp may be closed; pidguard.sh.)
	if !strings.Contains(log, "killed process group") {
		t.Errorf("the guard's log does not show a replacement ending the flood:\n%s", log)
	}
	assertDesktopWorks(t, m, dir, st)
}

// TestAPlantedXLockDoesNotEndTheDesktop: while Xvfb restarts after a crash
// (the sandbox user cannot kill it; the test crashes it as the desktop
// user), a program of the sandbox user's keeps planting /tmp/.X99-lock
// naming a live process, which Xvfb would take for a server already
// running. Three crashes, and the display comes back each time. (Five
// crashes each within 10 s of a start end the sandbox by design: a
// desktop that cannot be kept up.)
func TestAPlantedXLockDoesNotEndTheDesktop(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, m, dir, `setsid python3 -c 'import os
while True:
    try:
        fd = os.open("/tmp/.X99-lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        os.write(fd, b"%10d\n" % 1)
        os.close(fd)
    except OSError:
        pass' </dev/null >/dev/null 2>&1 &`)
	for crash := 1; crash <= 3; crash++ {
		before := asUser(t, docker, st.ContainerID, "desktop", `pgrep -x Xvfb`)
		asUser(t, docker, st.ContainerID, "desktop", `pkill -KILL -x Xvfb`)
		if !pollUntil(t, fmt.Sprintf("Xvfb is back after crash %d", crash), func() bool {
			if s, _ := m.Status(context.Background(), dir); s.Status != service.StatusRunning {
				return false
			}
			now := asUser(t, docker, st.ContainerID, "desktop", `pgrep -x Xvfb && xdpyinfo >/dev/null 2>&1 && echo up`)
			return strings.HasSuffix(now, "up\n") && now != before+"up\n"
		}) {
			t.Log(asUser(t, docker, st.ContainerID, "root", `ls -l /tmp/.X99-lock; tail -5 /proc/1/fd/2 2>/dev/null`))
			return
		}
	}
	if planted := exec(t, m, dir, `pgrep -f O_EXCL >/dev/null && echo planting`).Stdout; planted != "planting\n" {
		t.Fatalf("the planter stopped: the test proves nothing")
	}
	// x11vnc, which ends with its display, is back after its own pause.
	pollUntil(t, "the sandbox answers again", func() bool {
		_, err := m.Screenshot(context.Background(), dir)
		return err == nil && desktop.Probe(context.Background(), "127.0.0.1", st.WSPort, viewerPage) == nil
	})
	assertDesktopWorks(t, m, dir, st)
}

// TestTwoSidecarsShareTheGuard: a second sidecar that finds the sandbox
// running keeps a guard of its own, which stands by while the first acts:
// neither ends the other's (each sidecar would start its own again, in
// turn, for ever). When the acting one is killed, the other acts at once.
func TestTwoSidecarsShareTheGuard(t *testing.T) {
	first, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	if _, err := first.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	second, _ := dockertest.Manager(t, nil)
	if _, err := second.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	guards := func() string { return exec(t, first, dir, "pgrep -f 'pilot-[p]idguard' | sort | tr '\\n' ' '").Stdout }
	var both string
	if !pollUntil(t, "two guards run", func() bool { both = guards(); return strings.Count(both, " ") == 2 }) {
		return
	}
	started := func() int {
		return strings.Count(exec(t, first, dir, "cat /tmp/pilot-pidguard.log").Stdout, "pilot-pidguard: started")
	}
	before := started()
	// Nothing to poll for: that nothing changes. A sidecar starts a guard
	// again a second after its own ended.
	time.Sleep(3 * time.Second)
	if now, after := guards(), started(); now != both || after != before {
		t.Errorf("the guards changed: %q -> %q, %d -> %d started", both, now, before, after)
	}
	log := exec(t, first, dir, "cat /tmp/pilot-pidguard.log").Stdout
	var acting int
	if i := strings.Index(log, "pilot-pidguard: guard "); i < 0 || !strings.Contains(log, "stands by until it ends") {
		t.Fatalf("no guard stands by:\n%s", log)
	} else if _, err := fmt.Sscanf(log[i:], "pilot-pidguard: guard %d acts", &acting); err != nil {
		t.Fatalf("%v:\n%s", err, log)
	}
	exec(t, first, dir, fmt.Sprintf("kill -KILL %d", acting))
	pollUntil(t, "the guard standing by acts", func() bool {
		return strings.Contains(exec(t, first, dir, "cat /tmp/pilot-pidguard.log").Stdout, "the guard that acted ended: this one")
	})
}
