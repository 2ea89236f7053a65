package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestAFakeVNCServerIsNeverBehindTheViewer: x11vnc is gone (a crash; the
// test ends it as the desktop user and freezes its supervisor), and a
// server of the sandbox user's holds 127.0.0.1:5900, asking no password,
// as the audit of issue 28 found it after killing x11vnc's X connection.
// The real websockify must not put a viewer through to it, and readiness
// must not pass. Then websockify is gone too, and the sandbox's own
// websockify serves the viewer's real files in front of a server that
// takes any password, or asks none: readiness says it is not the
// sandbox's VNC server, and a sidecar that finds the sandbox does not call
// it running.
func TestAFakeVNCServerIsNeverBehindTheViewer(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	password := passwordOf(t, st.ViewerURL)
	copyFake(t, m, dir)

	asUser(t, docker, st.ContainerID, "desktop", `v=$(pgrep -o -x x11vnc); s=$(ps -o ppid= -p $v); kill -STOP $s; kill $v
		for i in $(seq 100); do pgrep -x x11vnc >/dev/null || break; sleep 0.1; done`)
	serveFake(t, m, dir, "none", 5900)
	for range 10 {
		if types := viewerSecurityTypes(t, st.WSPort); bytes.IndexByte(types, 1) >= 0 {
			t.Fatalf("a viewer through websockify was offered the security types %v: None, by the sandbox's own server", types)
		}
	}
	if err := desktop.ProbeAuth(ctx, "127.0.0.1", st.WSPort, viewerPage, password); err == nil {
		t.Error("readiness passed with the sandbox's server on the VNC port")
	}

	asUser(t, docker, st.ContainerID, "desktop", `w=$(pgrep -o -x websockify); s=$(ps -o ppid= -p $w); kill -STOP $s; kill $w
		for i in $(seq 100); do pgrep -x websockify >/dev/null || break; sleep 0.1; done`)
	exec(t, m, dir, `setsid websockify --web /usr/share/novnc 6080 127.0.0.1:5901 </dev/null >/dev/null 2>&1 &`)
	for _, mode := range []string{"anypassword", "none"} {
		exec(t, m, dir, `pkill -f 'fake_vnc.py .* 5901'; true`)
		serveFake(t, m, dir, mode, 5901)
		var err error
		pollUntil(t, "the sandbox's websockify answers", func() bool {
			err = desktop.ProbeAuth(ctx, "127.0.0.1", st.WSPort, viewerPage, password)
			return errors.Is(err, desktop.ErrNotOurVNCServer)
		})
		if !errors.Is(err, desktop.ErrNotOurVNCServer) {
			t.Errorf("readiness, %s behind the sandbox's websockify: %v", mode, err)
		}
	}
	second, _ := dockertest.Manager(t, nil)
	got, err := second.Start(ctx, dir)
	if !errors.Is(err, desktop.ErrNotOurVNCServer) || got.ViewerURL != "" {
		t.Errorf("a start over the sandbox's own VNC server: %+v, %v", got, err)
	}
	if s, err := second.Status(ctx, dir); err != nil || s.Status == service.StatusRunning || s.ViewerURL != "" {
		t.Errorf("state over the sandbox's own VNC server: %+v, %v", s, err)
	}
}

// TestKillingTheVNCServersXConnectionShowsNoFakeDesktop runs, as the
// sandbox user only, the chain the audit of issue 28 ran: end every X
// client's connection (xkill -id on every window: x11vnc exits when its
// display goes) and, in the same loop, try to serve 127.0.0.1:5900 with a
// server that asks no password, while viewers connect through websockify
// (the audit: 6 of 31 were offered None). None may be: the sandbox can
// end the desktop's X clients, as it can grab the display, but never put
// its own server behind the viewer.
func TestKillingTheVNCServersXConnectionShowsNoFakeDesktop(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	copyFake(t, m, dir)
	exec(t, m, dir, `setsid sh -c 'while :; do
		for w in $(xwininfo -root -tree 2>/dev/null | grep -o "^ *0x[0-9a-f]*"); do xkill -id $w; done
		python3 /tmp/fake_vnc.py none 5900 & sleep 0.3; done' </dev/null >/dev/null 2>&1 &`)
	answered := 0
	for range 31 {
		types := viewerSecurityTypes(t, st.WSPort)
		if bytes.IndexByte(types, 1) >= 0 {
			t.Fatalf("a viewer through websockify was offered the security types %v: None, by the sandbox's own server", types)
		}
		if types != nil {
			answered++
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("%d of 31 viewers got the real VNC server; the others none", answered)
}

// copyFake puts testdata/fake_vnc.py in the sandbox's /tmp.
func copyFake(t *testing.T, m *service.Manager, dir string) {
	t.Helper()
	script, err := os.ReadFile("testdata/fake_vnc.py")
	if err != nil {
		t.Fatal(err)
	}
	text := string(script)
	if out, err := m.Exec(context.Background(), dir, service.ExecRequest{Command: "cat > /tmp/fake_vnc.py", Stdin: &text}); err != nil || out.ExitCode != 0 {
		t.Fatalf("copy the fake server: %v %+v", err, out)
	}
}

// serveFake starts testdata/fake_vnc.py as the sandbox user on port, and
// waits until it greets.
func serveFake(t *testing.T, m *service.Manager, dir, mode string, port int) {
	t.Helper()
	exec(t, m, dir, fmt.Sprintf(`setsid python3 /tmp/fake_vnc.py %s %d </dev/null >/dev/null 2>&1 &`, mode, port))
	check := fmt.Sprintf(`python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", %d), 2); print(s.recv(12))'`, port)
	pollUntil(t, "the sandbox's VNC server greets", func() bool {
		return strings.Contains(exec(t, m, dir, check+" 2>/dev/null").Stdout, "RFB")
	})
}

// viewerSecurityTypes opens a WebSocket to websockify as a viewer does and
// returns the security types the VNC server behind it offers; nil when
// there is no WebSocket, or it ends before the server offers any.
func viewerSecurityTypes(t *testing.T, wsPort int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialer := websocket.Dialer{Subprotocols: []string{"binary"}}
	ws, resp, err := dialer.DialContext(ctx, fmt.Sprintf("ws://127.0.0.1:%d/websockify", wsPort), nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		t.Logf("websocket: %v", err)
		return nil
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []byte
	read := func(n int) bool {
		for len(got) < n {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				return false
			}
			got = append(got, msg...)
		}
		return true
	}
	if !read(12) || ws.WriteMessage(websocket.BinaryMessage, []byte("RFB 003.008\n")) != nil || !read(13) {
		return nil
	}
	n := int(got[12])
	if !read(13 + n) {
		return nil
	}
	return got[13 : 13+n]
}
