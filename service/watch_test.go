package service_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// X keysyms the test types.
const (
	keysymA      = 0x61
	keysymReturn = 0xff0d
	keysymCtrl   = 0xffe3
	keysymAlt    = 0xffe9
	keysymDelete = 0xffff
)

// TestWatchingIsEnforcedByTheVNCServer connects to the desktop the way the
// panel's watchUrl does (a WebSocket through websockify, the view-only
// password from the URL), but sends what a modified page could: pointer
// moves and clicks, keys, clipboard text. An xev window that has the focus
// and covers the screen records what reaches the desktop. Nothing from the
// view-only client may; the same messages through viewerUrl, as the
// control, must.
func TestWatchingIsEnforcedByTheVNCServer(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	x := newXevWatcher(t, m, dir)

	control := dialViewer(t, st.ViewerURL)
	watcher := dialViewer(t, st.WatchURL)
	x.mark(control, 601, 401)
	send(t, watcher, "cut by a watcher")
	x.mark(control, 702, 502)
	if evs := x.between(601, 401, 702, 502); len(evs) != 0 {
		t.Errorf("input from the view-only client reached the desktop: %v", evs)
	}
	if cut := x.cutBuffer(); strings.Contains(cut, "watcher") {
		t.Errorf("clipboard text from the view-only client reached the desktop: %q", cut)
	}

	// The control: the same messages with the full-control password act.
	send(t, control, "cut by the controller")
	x.mark(control, 803, 603)
	want := []string{"MotionNotify@50,60", "ButtonPress1@50,60", "ButtonRelease1@50,60", "ButtonPress3@50,60", "ButtonRelease3@50,60",
		"KeyPress:a", "KeyRelease:a", "KeyPress:Return", "KeyRelease:Return", "KeyPress:Control_L", "KeyPress:Alt_L", "KeyPress:Delete"}
	got := strings.Join(x.between(702, 502, 803, 603), " ")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("control client's input: %s missing from %s", w, got)
		}
	}
	if cut := x.cutBuffer(); cut != "cut by the controller" {
		t.Errorf("control client's clipboard text: %q", cut)
	}

	// A wrong password is refused; RFB reads only the first 8 characters.
	if _, err := rfbtest.Dial(fmt.Sprintf("127.0.0.1:%d", st.VNCPort), "wrong123", 10*time.Second); !errors.Is(err, rfbtest.ErrAuth) {
		t.Errorf("a wrong password: %v, want refused", err)
	}
	c, err := rfbtest.Dial(fmt.Sprintf("127.0.0.1:%d", st.VNCPort), passwordOf(t, st.ViewerURL)+"ignored", 10*time.Second)
	if err != nil {
		t.Errorf("the password with more characters after it: %v", err)
	} else {
		c.Close()
	}
}

func dialViewer(t *testing.T, url string) *rfbtest.Conn {
	t.Helper()
	c, err := rfbtest.DialViewer(url, 10*time.Second)
	if err != nil {
		t.Fatalf("connect through %s: %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// send sends a viewer's input: a move, a left and a right click at 50,60,
// "a", Return, ctrl+alt+Delete, and clipboard text, then waits until the
// server has handled it all.
func send(t *testing.T, c *rfbtest.Conn, cut string) {
	t.Helper()
	steps := []func() error{
		func() error { return c.Pointer(0, 50, 60) },
		func() error { return c.Pointer(1, 50, 60) },
		func() error { return c.Pointer(0, 50, 60) },
		func() error { return c.Pointer(4, 50, 60) },
		func() error { return c.Pointer(0, 50, 60) },
	}
	for _, k := range []uint32{keysymA, keysymReturn} {
		steps = append(steps, func() error { return c.Key(true, k) }, func() error { return c.Key(false, k) })
	}
	for _, k := range []uint32{keysymCtrl, keysymAlt, keysymDelete} {
		steps = append(steps, func() error { return c.Key(true, k) })
	}
	for _, k := range []uint32{keysymDelete, keysymAlt, keysymCtrl} {
		steps = append(steps, func() error { return c.Key(false, k) })
	}
	steps = append(steps, func() error { return c.CutText(cut) })
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Sync(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// xevWatcher is an xev window over the whole screen, with the focus,
// logging every pointer and key event the desktop gets.
type xevWatcher struct {
	t   *testing.T
	m   *service.Manager
	dir string
}

func newXevWatcher(t *testing.T, m *service.Manager, dir string) *xevWatcher {
	t.Helper()
	exec(t, m, dir, `xev -geometry 1280x800+0+0 -event mouse -event keyboard > /tmp/xev.log 2>&1 &`)
	x := &xevWatcher{t: t, m: m, dir: dir}
	x.poll("the xev window", `xdotool search --onlyvisible --name "Event Tester"`)
	d, err := m.Desktop(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Click(context.Background(), 640, 400, 1, 1); err != nil { // the focus
		t.Fatal(err)
	}
	return x
}

// mark moves the pointer with c to x,y and waits until xev logged it: every
// event the desktop got before is in the log by then.
func (x *xevWatcher) mark(c *rfbtest.Conn, px, py int) {
	x.t.Helper()
	if err := c.Pointer(0, px, py); err != nil {
		x.t.Fatal(err)
	}
	if err := c.Sync(10 * time.Second); err != nil {
		x.t.Fatal(err)
	}
	x.poll(fmt.Sprintf("the mark at %d,%d", px, py), fmt.Sprintf(`grep -q 'root:(%d,%d)' /tmp/xev.log`, px, py))
}

var xevEvent = regexp.MustCompile(`(?s)^(\w+) event, serial.*?root:\((-?\d+),(-?\d+)\)(?:.*?button (\d+),)?(?:.*?keysym 0x[0-9a-f]+, (\w+)\))?`)

// between lists the pointer and key events xev logged after the motion to
// the first mark and before the motion to the second.
func (x *xevWatcher) between(fromX, fromY, toX, toY int) []string {
	x.t.Helper()
	var out []string
	inside := false
	for _, block := range strings.Split(exec(x.t, x.m, x.dir, "cat /tmp/xev.log").Stdout, "\n\n") {
		m := xevEvent.FindStringSubmatch(strings.TrimSpace(block))
		if m == nil || m[1] == "EnterNotify" || m[1] == "LeaveNotify" || m[1] == "KeymapNotify" {
			continue
		}
		at := m[2] + "," + m[3]
		switch {
		case m[1] == "MotionNotify" && at == fmt.Sprintf("%d,%d", fromX, fromY):
			inside = true
			continue
		case m[1] == "MotionNotify" && at == fmt.Sprintf("%d,%d", toX, toY):
			return out
		case !inside:
			continue
		case m[5] != "":
			out = append(out, m[1]+":"+m[5])
		default:
			out = append(out, m[1]+m[4]+"@"+at)
		}
	}
	x.t.Fatalf("no motion to %d,%d in the xev log", toX, toY)
	return nil
}

// cutBuffer is the text a VNC client's clipboard message puts on the X
// server (x11vnc sets CUT_BUFFER0).
func (x *xevWatcher) cutBuffer() string {
	out := exec(x.t, x.m, x.dir, `xprop -root CUT_BUFFER0`).Stdout
	_, value, ok := strings.Cut(out, " = ")
	if !ok {
		return ""
	}
	return strings.Trim(strings.TrimSpace(value), `"`)
}

// poll runs a shell test in the sandbox until it succeeds (dockertest.PollExec).
func (x *xevWatcher) poll(what, test string) {
	x.t.Helper()
	dockertest.PollExec(x.t, x.m, x.dir, what, test)
}
