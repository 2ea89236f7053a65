package ports_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// startNoNetwork starts a sandbox whose settings ask for no network, on a
// manager whose desktop ports are carried the way serve and ui carry them.
func startNoNetwork(t testing.TB) (*service.Manager, *ports.Carrier, string, service.State) {
	t.Helper()
	desktops := ports.NewDesktopRelay(dockertest.Engine(t), zerolog.Nop())
	m, docker := dockertest.Manager(t, func(c *service.Config) {
		c.Logger = zerolog.Nop()
		c.DesktopPorts = desktops
	})
	dockertest.Run(t, m)
	relays := ports.NewCarrier(m, dockertest.Engine(t), ports.Options{Desktops: desktops, Log: zerolog.Nop()})
	t.Cleanup(relays.Close)
	project := dockertest.Project(t, docker)
	os.MkdirAll(filepath.Join(project, projectfs.Dir), 0o755)
	if err := os.WriteFile(projectfs.SettingsFile(project), []byte(`{"sandbox": {"network": "none"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := m.Start(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	return m, relays, project, st
}

// unreachableScript tries a TCP connection to each address given, port 80,
// and prints, one a line, what each got.
const unreachableScript = `python3 -c '
import socket, sys
for a in sys.argv[1:]:
    try:
        socket.create_connection((a, 80), timeout=5).close()
        print(a, "connected")
    except OSError as e:
        print(a, e.strerror)
' `

// hostAddresses are the host's own addresses but loopback: the bridge
// gateways of Docker's networks among them.
func hostAddresses(t *testing.T) []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLoopback() && ip.IP.To4() != nil {
			out = append(out, ip.IP.String())
		}
	}
	return out
}

func TestNetworkNoneSandbox(t *testing.T) {
	m, relays, project, st := startNoNetwork(t)
	ctx := context.Background()
	if st.Status != service.StatusRunning || st.Network != service.NetworkNone || st.WSPort == 0 || st.VNCPort == 0 {
		t.Fatalf("state %+v, want running without a network, with carried ports", st)
	}

	t.Run("the desktop answers through the relay", func(t *testing.T) {
		c, err := dockertest.Engine(t).InspectContainer(ctx, st.ContainerID)
		if err != nil || !c.NoNetwork || len(c.Ports) != 0 {
			t.Fatalf("container %+v, %v: want no network and no published port", c, err)
		}
		if err := desktop.Probe(ctx, "127.0.0.1", st.WSPort, c.Labels[images.LabelViewer]); err != nil {
			t.Errorf("probe through the relay: %v", err)
		}
		resp, err := http.Get(st.ViewerURL)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "<html") {
			t.Errorf("GET %s: %d %.200q", st.ViewerURL, resp.StatusCode, page)
		}
		vnc, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(st.VNCPort), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer vnc.Close()
		vnc.SetDeadline(time.Now().Add(10 * time.Second))
		banner := make([]byte, 12)
		if _, err := io.ReadFull(vnc, banner); err != nil || !strings.HasPrefix(string(banner), "RFB 003.") {
			t.Errorf("VNC banner through the relay: %q, %v", banner, err)
		}
	})
	t.Run("it has only its loopback", func(t *testing.T) {
		if out, ok := run(t, m, project, "ls /sys/class/net"); !ok || strings.Fields(out)[0] != "lo" || len(strings.Fields(out)) != 1 {
			t.Errorf("interfaces: %q", out)
		}
		targets := append(hostAddresses(t), "1.1.1.1", "8.8.8.8")
		out, _ := run(t, m, project, unreachableScript+strings.Join(targets, " "))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != len(targets) {
			t.Fatalf("tried %v: %q", targets, out)
		}
		for _, line := range lines {
			if !strings.HasSuffix(line, "Network is unreachable") {
				t.Errorf("from the sandbox: %s", line)
			}
		}
	})
	t.Run("a forwarded host port is reached from inside", func(t *testing.T) {
		web := hostServer(t)
		if _, err := relays.ForwardPort(ctx, project, 8500, web); err != nil {
			t.Fatal(err)
		}
		if ports.ForwardDirect(relays, project, 8500) {
			t.Error("a direct route into a sandbox without a network")
		}
		if out, ok := run(t, m, project, fetchScript+"http://localhost:8500/"); !ok || out != "hello from the host" {
			t.Errorf("GET the forward in the sandbox: %q", out)
		}
	})
	t.Run("an exposed port answers on the host", func(t *testing.T) {
		if _, err := m.Background(ctx, project, service.ExecRequest{Command: "mkdir -p /tmp/site && echo inside >/tmp/site/f && cd /tmp/site && exec python3 -m http.server 8800 --bind 127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
		dockertest.PollExec(t, m, project, "port 8800 listens", "exec 3<>/dev/tcp/127.0.0.1/8800")
		x, err := relays.ExposePort(ctx, project, 8800)
		if err != nil {
			t.Fatal(err)
		}
		if ports.Direct(relays, project, 8800) {
			t.Error("a direct route into a sandbox without a network")
		}
		if got := get(t, x.URL+"f"); got != "inside\n" {
			t.Errorf("GET the exposed port: %q", got)
		}
	})
	t.Run("the desktop tools work", func(t *testing.T) {
		shot, err := m.Screenshot(ctx, project)
		if err != nil || shot.Width != st.Display.Width || len(shot.PNG) == 0 {
			t.Errorf("screenshot: %dx%d %d bytes, %v", shot.Width, shot.Height, len(shot.PNG), err)
		}
		d, err := m.Desktop(ctx, project)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Move(ctx, 123, 45); err != nil {
			t.Fatal(err)
		}
		if p, err := d.Pointer(ctx); err != nil || p.X != 123 || p.Y != 45 {
			t.Errorf("pointer after a move: %v, %v", p, err)
		}
		if err := d.SetClipboard(ctx, "no network"); err != nil {
			t.Fatal(err)
		}
		if text, _, err := d.Clipboard(ctx); err != nil || text != "no network" {
			t.Errorf("clipboard: %q, %v", text, err)
		}
	})
	t.Run("another sidecar finding it running carries its desktop too", func(t *testing.T) {
		m2, _ := dockertest.Manager(t, func(c *service.Config) {
			c.Logger = zerolog.Nop()
			c.DesktopPorts = ports.NewDesktopRelay(dockertest.Engine(t), zerolog.Nop())
		})
		other, err := m2.Status(ctx, project)
		if err != nil || other == nil || other.Status != service.StatusRunning || other.WSPort == 0 || other.WSPort == st.WSPort {
			t.Fatalf("status in another sidecar: %+v, %v", other, err)
		}
		if page := get(t, other.ViewerURL); !strings.Contains(page, "<html") {
			t.Errorf("GET its viewer: %.200q", page)
		}
	})
	t.Run("its desktop ports close when it stops", func(t *testing.T) {
		if _, err := m.Stop(ctx, project); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(st.WSPort))
			if err != nil {
				break
			}
			c.Close()
			if time.Now().After(deadline) {
				t.Fatal("the carried viewer port still listens after the stop")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// get returns the body at url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// The browser of a sandbox without a network answers DevTools through the
// sidecar's relay (sandbox/browser), which needs no network either.
func TestNetworkNoneBrowser(t *testing.T) {
	desktops := ports.NewDesktopRelay(dockertest.Engine(t), zerolog.Nop())
	m, docker := dockertest.Manager(t, func(c *service.Config) {
		c.Logger = zerolog.Nop()
		c.DesktopPorts = desktops
	})
	dockertest.Run(t, m)
	relays := ports.NewCarrier(m, docker, ports.Options{Desktops: desktops, Log: zerolog.Nop()})
	t.Cleanup(relays.Close)
	project := dockertest.Project(t, docker)
	os.MkdirAll(filepath.Join(project, projectfs.Dir), 0o755)
	if err := os.WriteFile(projectfs.SettingsFile(project), []byte(`{"sandbox": {"image": "browser", "network": "none"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := m.Start(ctx, project)
	if err != nil || st.Network != service.NetworkNone {
		t.Fatalf("start: %+v, %v", st, err)
	}
	ws, err := relays.Browser(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := websocket.DefaultDialer.Dial(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := conn.WriteJSON(map[string]any{"id": 1, "method": "Browser.getVersion"}); err != nil {
		t.Fatal(err)
	}
	var reply struct {
		ID     int
		Result struct{ Product string }
	}
	if err := conn.ReadJSON(&reply); err != nil || reply.ID != 1 || !strings.Contains(reply.Result.Product, "Chrom") {
		t.Errorf("Browser.getVersion through the relay: %+v, %v", reply, err)
	}
}
