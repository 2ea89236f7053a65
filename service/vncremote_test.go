package service_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// reversePort is where a listener of the sandbox's waits for a reverse
// connection from the VNC server (x11vnc's default for one, in hex as
// /proc/net/tcp writes it).
const (
	reversePort    = 5500
	reversePortHex = ":157C"
)

// TestSandboxCannotCommandTheVNCServer: x11vnc, which runs as desktop,
// obeys commands any X client of the display puts in the root window's
// X11VNC_REMOTE property (what `x11vnc -R` does), and connects out to an
// address put in VNC_CONNECT, a reverse connection libvncserver lets in
// without a password. Every X client of the sandbox user can do both; with
// -noremote and -novncconnect neither may have an effect: "stop" leaves
// x11vnc running, "viewonly" leaves the viewer in control, and nothing
// connects to the sandbox's listener.
func TestSandboxCannotCommandTheVNCServer(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := rfbtest.Dial(fmt.Sprintf("127.0.0.1:%d", st.VNCPort), passwordOf(t, st.ViewerURL), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer viewer.Close()
	pid := exec(t, m, dir, "pgrep -x x11vnc").Stdout
	// The witnesses need x11vnc sending clipboard text to this viewer:
	// wait until one arrives (before x11vnc ran its clients in threads it
	// sent none for a few seconds after a start).
	warmUp(t, m, dir, viewer)

	if err := commandAndWitness(t, m, dir, viewer, "x11vnc -display $DISPLAY -R viewonly"); err != nil {
		t.Fatal(err)
	}
	if err := viewer.CutText("the viewer still has control"); err != nil {
		t.Fatal(err)
	}
	if err := viewer.Sync(10 * time.Second); err != nil {
		t.Fatalf("the viewer after viewonly: %v", err)
	}
	dockertest.PollExec(t, m, dir, "the viewer's clipboard text in CUT_BUFFER0 (x11vnc obeyed viewonly?)",
		"xprop -root CUT_BUFFER0 | grep -q 'still has control'")

	if err := commandAndWitness(t, m, dir, viewer, "x11vnc -display $DISPLAY -R stop"); err != nil {
		t.Fatal(err)
	}
	if now := exec(t, m, dir, "pgrep -x x11vnc").Stdout; now != pid {
		t.Fatalf("x11vnc was pid %q, now %q: it obeyed stop", pid, now)
	}

	exec(t, m, dir, fmt.Sprintf(`setsid python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", %d)); s.listen(); time.sleep(120)' </dev/null >/dev/null 2>&1 &`, reversePort))
	dockertest.PollExec(t, m, dir, "the sandbox's listener", "grep -q '"+reversePortHex+" 00000000:0000 0A' /proc/net/tcp")
	// A reverse connection that never finishes its handshake may also
	// keep x11vnc from sending the witnesses: look for it whatever the
	// witnesses say.
	witnessed := commandAndWitness(t, m, dir, viewer,
		fmt.Sprintf("xprop -root -f VNC_CONNECT 8s -set VNC_CONNECT 127.0.0.1:%d", reversePort))
	if conns := established(exec(t, m, dir, "cat /proc/net/tcp").Stdout, reversePortHex); len(conns) > 0 {
		t.Errorf("connections to the sandbox's listener: x11vnc followed VNC_CONNECT: %q", conns)
	}
	if witnessed != nil {
		t.Fatal(witnessed)
	}
}

// commandAndWitness runs command in the sandbox, then waits until x11vnc
// has done what it would do about it. x11vnc reads the root window's
// properties in one turn of its loop and acts on them in the same or the
// next: once two changes of CUT_BUFFER0 made after the command have
// reached the viewer, it has.
func commandAndWitness(t *testing.T, m *service.Manager, dir string, viewer *rfbtest.Conn, command string) error {
	t.Helper()
	if out := exec(t, m, dir, command); out.ExitCode != 0 {
		t.Fatalf("%s: %+v", command, out)
	}
	for i := range 2 {
		if err := witness(m, dir, viewer, fmt.Sprintf("witness %d after: %s", i, command)); err != nil {
			return fmt.Errorf("after %q: %w", command, err)
		}
	}
	return nil
}

// witness changes CUT_BUFFER0 in the sandbox and waits for the viewer to
// get the text, which x11vnc sends at once.
func witness(m *service.Manager, dir string, viewer *rfbtest.Conn, text string) error {
	out, err := m.Exec(context.Background(), dir, service.ExecRequest{
		Command: "xprop -root -f CUT_BUFFER0 8s -set CUT_BUFFER0 '" + text + "'", Timeout: 30 * time.Second,
	})
	if err != nil || out.ExitCode != 0 {
		return fmt.Errorf("set CUT_BUFFER0: %v %+v", err, out)
	}
	err = awaitCutText(viewer, text, 10*time.Second)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("x11vnc hung up on the viewer (it obeyed stop?): %w", err)
	}
	if err != nil {
		return fmt.Errorf("the viewer did not get %q: %w", text, err)
	}
	return nil
}

// warmUp changes CUT_BUFFER0 until the viewer gets it, for at most 60 s.
func warmUp(t *testing.T, m *service.Manager, dir string, viewer *rfbtest.Conn) {
	t.Helper()
	var err error
	for i := range 6 {
		if err = witness(m, dir, viewer, fmt.Sprintf("warm-up %d", i)); err == nil {
			return
		}
	}
	t.Fatalf("x11vnc sends this viewer no clipboard text: %v", err)
}

// established returns the lines of /proc/net/tcp for established
// connections from or to port (":XXXX" in hex).
func established(procNetTCP, port string) []string {
	var out []string
	for _, line := range strings.Split(procNetTCP, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[3] == "01" && (strings.HasSuffix(f[1], port) || strings.HasSuffix(f[2], port)) {
			out = append(out, line)
		}
	}
	return out
}
