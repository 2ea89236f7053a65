package ports_test

import (
	"context"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// painter repaints the whole root window in another colour every 20 ms:
// a screen that always changes, for a viewer's frame rate.
const painter = `python3 -c '
import ctypes, time
x = ctypes.CDLL("libX11.so.6"); P = ctypes.c_void_p
x.XOpenDisplay.restype = P
x.XDefaultRootWindow.restype = ctypes.c_ulong; x.XDefaultRootWindow.argtypes = [P]
x.XSetWindowBackground.argtypes = [P, ctypes.c_ulong, ctypes.c_ulong]
x.XClearWindow.argtypes = [P, ctypes.c_ulong]
x.XFlush.argtypes = [P]
d = x.XOpenDisplay(None); root = x.XDefaultRootWindow(d); i = 0
while True:
    i += 1
    x.XSetWindowBackground(d, root, (i * 2654435761) & 0xffffff)
    x.XClearWindow(d, root); x.XFlush(d); time.sleep(0.02)
'`

// BenchmarkCarriedDesktop compares a sandbox's desktop on ports the
// engine publishes with the same carried by the sidecar's relays (a
// sandbox without a network, ports.DesktopRelay): whether the relays
// could stand in for published ports on engines that let the LAN reach
// them (Docker Engine before 28). Each iteration is a viewer's first
// picture (a WebSocket through websockify, the password, a whole-screen
// update); then, on a screen repainted every 20 ms, the frames a viewer
// gets in 5 s of asking for what changed (raw encoding: 4 MB a frame).
//
//	go test -run '^$' -bench CarriedDesktop -benchtime 10x -count 3 ./ports
func BenchmarkCarriedDesktop(b *testing.B) {
	b.Run("published", func(b *testing.B) {
		sb := startSandbox(b)
		st, err := sb.m.Status(context.Background(), sb.project)
		if err != nil {
			b.Fatal(err)
		}
		benchDesktop(b, sb.m, sb.project, *st)
	})
	b.Run("relayed", func(b *testing.B) {
		m, _, project, st := startNoNetwork(b)
		benchDesktop(b, m, project, st)
	})
}

func benchDesktop(b *testing.B, m *service.Manager, project string, st service.State) {
	for b.Loop() {
		c, err := rfbtest.DialViewer(st.ViewerURL, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Update(false, 30*time.Second); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.StopTimer()
	if out, err := m.Exec(context.Background(), project, service.ExecRequest{Command: "setsid " + painter + " </dev/null >/dev/null 2>&1 &"}); err != nil || out.ExitCode != 0 {
		b.Fatalf("painter: %v %+v", err, out)
	}
	c, err := rfbtest.DialViewer(st.ViewerURL, 30*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	frames, began := 0, time.Now()
	for time.Since(began) < 5*time.Second {
		if err := c.Update(true, 30*time.Second); err != nil {
			b.Fatal(err)
		}
		frames++
	}
	b.ReportMetric(float64(frames)/time.Since(began).Seconds(), "frames/s")
}
