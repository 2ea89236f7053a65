package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// rfbSecurityTypes connects to a VNC server, checks its RFB banner and
// returns the security types it offers.
func rfbSecurityTypes(t *testing.T, port int) []byte {
	t.Helper()
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	banner := make([]byte, 12)
	if _, err := io.ReadFull(conn, banner); err != nil || !bytes.HasPrefix(banner, []byte("RFB 003.00")) {
		t.Fatalf("VNC banner %q, %v", banner, err)
	}
	conn.Write([]byte("RFB 003.008\n"))
	var n [1]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil || n[0] == 0 {
		t.Fatalf("security types: %v (count %d)", err, n[0])
	}
	types := make([]byte, n[0])
	io.ReadFull(conn, types)
	return types
}

// viewerPage is the image's viewer (its label pilot.sandbox.viewer), which
// the probe checks against the sidecar's copy.
const viewerPage = "pilot/viewer.html"

func exec(t *testing.T, m *service.Manager, dir, command string) service.ExecOutput {
	t.Helper()
	out, err := m.Exec(context.Background(), dir, service.ExecRequest{Command: command, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("exec %q: %v", command, err)
	}
	return out
}

func TestSandboxLifecycle(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()

	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != service.StatusRunning || st.WSPort == 0 || st.VNCPort == 0 {
		t.Fatalf("state = %+v", st)
	}
	assertViewerAnswers(t, st)
	assertKeptToLoopback(t, docker, st)
	if out := exec(t, m, dir, `echo "$(whoami) $DISPLAY $USER $LOGNAME"; xdpyinfo | grep dimensions`); !strings.Contains(out.Stdout, "sandbox :99 sandbox sandbox") ||
		!strings.Contains(out.Stdout, "1280x800 pixels") {
		t.Errorf("exec: %+v", out)
	}
	shot, err := m.Screenshot(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil || img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 || shot.Width != 1280 {
		t.Errorf("screenshot: %v %v", img.Bounds(), err)
	}

	// Stop keeps the container's files; the next start finds them.
	exec(t, m, dir, "echo kept > ~/marker.txt")
	stopped, err := m.Stop(ctx, dir)
	if err != nil || stopped.Status != service.StatusStopped || stopped.WSPort != 0 {
		t.Fatalf("stop: %+v, %v", stopped, err)
	}
	if _, err := m.Exec(ctx, dir, service.ExecRequest{Command: "true"}); !errors.Is(err, service.ErrNotRunning) {
		t.Errorf("exec on a stopped sandbox: %v", err)
	}
	again, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.ContainerID != st.ContainerID {
		t.Error("restart made a new container")
	}
	if err := desktop.Probe(ctx, "127.0.0.1", again.WSPort, viewerPage); err != nil {
		t.Errorf("after restart (a stale X lock would stop Xvfb): %v", err)
	}
	if out := exec(t, m, dir, "cat ~/marker.txt"); out.Stdout != "kept\n" {
		t.Errorf("file after restart: %+v", out)
	}

	removed, err := m.Remove(ctx, dir)
	if err != nil || !removed {
		t.Fatalf("remove: %v %v", removed, err)
	}
	if st, err := m.Status(ctx, dir); st != nil || err != nil {
		t.Errorf("status after remove: %+v %v", st, err)
	}
}

// assertViewerAnswers checks that what the panel loads of a running
// sandbox answers (the sandbox's own viewer, with its script), that a
// WebSocket yields the VNC banner, and that the VNC server asks for a
// password (type 2) and offers no way in without one (type 1).
func assertViewerAnswers(t *testing.T, st service.State) {
	t.Helper()
	page, _, _ := strings.Cut(st.ViewerURL, "#")
	if !strings.HasSuffix(page, "/pilot/viewer.html") {
		t.Errorf("viewerUrl = %s, want the sandbox's viewer page", st.ViewerURL)
	}
	for _, u := range []string{page, strings.TrimSuffix(page, ".html") + ".js"} {
		resp, err := http.Get(u)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", u, resp, err)
		}
		resp.Body.Close()
	}
	if err := desktop.Probe(context.Background(), "127.0.0.1", st.WSPort, viewerPage); err != nil {
		t.Fatal(err)
	}
	if types := rfbSecurityTypes(t, st.VNCPort); !bytes.Contains(types, []byte{2}) || bytes.Contains(types, []byte{1}) {
		t.Errorf("VNC security types = %v, want VNC authentication only", types)
	}
}

// assertKeptToLoopback checks that a running sandbox's ports are published
// on loopback only, and that its password is in the viewer URL, not in
// the container's metadata.
func assertKeptToLoopback(t *testing.T, docker service.Docker, st service.State) {
	t.Helper()
	c, err := docker.InspectContainer(context.Background(), st.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.HostIPs) != 2 || c.HostIPs[5900] != "127.0.0.1" || c.HostIPs[6080] != "127.0.0.1" {
		t.Errorf("published on %v, want 127.0.0.1 only", c.HostIPs)
	}
	password := st.ViewerURL[strings.LastIndex(st.ViewerURL, "password=")+len("password="):]
	if meta := fmt.Sprint(c.Env, c.Labels, c.Name); len(password) != 8 || strings.Contains(meta, password) {
		t.Errorf("password %q is missing or in the container's metadata: %s", password, meta)
	}
}

func TestReconcileAfterSidecarRestart(t *testing.T) {
	first, docker := dockertest.Manager(t, nil)
	running := dockertest.Project(t, docker)
	stopped := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := first.Start(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Start(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Stop(ctx, stopped); err != nil {
		t.Fatal(err)
	}

	// A new sidecar knows nothing but what Docker and the files say.
	second, _ := dockertest.Manager(t, nil)
	states, err := second.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]service.State{}
	for _, s := range states {
		found[s.ProjectPath] = s
	}
	if got := found[running]; got != st {
		t.Errorf("running sandbox re-adopted as\n%+v\nwant\n%+v", got, st)
	}
	if got := found[stopped]; got.Status != service.StatusStopped {
		t.Errorf("stopped sandbox re-adopted as %+v", got)
	}
}

func TestChangesBehindTheSidecarAreAnnounced(t *testing.T) {
	m, docker := dockertest.Manager(t, func(c *service.Config) { c.ResyncInterval = time.Hour })
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	events, unsubscribe := m.Subscribe()
	t.Cleanup(unsubscribe)
	dockertest.Run(t, m)

	if err := docker.StopContainer(ctx, st.ContainerID, time.Second); err != nil {
		t.Fatal(err)
	}
	nextState(t, events, dir, "stopped")
	if err := docker.StartContainer(ctx, st.ContainerID); err != nil {
		t.Fatal(err)
	}
	nextState(t, events, dir, "running")
	if err := docker.RemoveContainer(ctx, st.ContainerID); err != nil {
		t.Fatal(err)
	}
	nextState(t, events, dir, "")
}

func TestConcurrentStartsMakeOneContainer(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	var wg sync.WaitGroup
	ids := make([]string, 10)
	errs := make([]error, 10)
	for i := range ids {
		wg.Go(func() {
			st, err := m.Start(context.Background(), dir)
			ids[i], errs[i] = st.ContainerID, err
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Errorf("start %d: %s, %v", i, ids[i], errs[i])
		}
	}
	all, err := docker.ListContainers(context.Background(), map[string]string{service.LabelProject: dir})
	if err != nil || len(all) != 1 {
		t.Errorf("%d containers for the project, %v", len(all), err)
	}
}
