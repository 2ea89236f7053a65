package ports_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/tcptest"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// fetchScript prints the body at a URL, or exits 1 saying why not.
const fetchScript = `python3 -c '
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end="")
except Exception as e:
    print(e, file=sys.stderr); sys.exit(1)
' `

// wsScript speaks WebSocket to localhost:PORT/ws by hand (the image has
// no client library): one text message out, the answer printed.
const wsScript = `python3 -c '
import base64, os, socket, sys
s = socket.create_connection(("localhost", int(sys.argv[1])), timeout=10)
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % key).encode())
f = s.makefile("rb")
status = f.readline()
if b" 101 " not in status:
    sys.exit("handshake: %r" % status)
while f.readline() not in (b"\r\n", b""):
    pass
msg, mask = sys.argv[2].encode(), os.urandom(4)
s.sendall(bytes([0x81, 0x80 | len(msg)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(msg)))
head = f.read(2)
print(f.read(head[1] & 0x7f).decode(), end="")
' `

// halfCloseScript sends 3 MiB to localhost:PORT, ends its output, and
// reads the answer to its end: "BYTES SAME".
const halfCloseScript = `python3 -c '
import os, socket, sys
s = socket.create_connection(("localhost", int(sys.argv[1])), timeout=30)
data = os.urandom(3 << 20)
s.sendall(data)
s.shutdown(socket.SHUT_WR)
back = bytearray()
while True:
    d = s.recv(1 << 16)
    if not d:
        break
    back += d
print(len(back), bytes(back) == data, end="")
' `

// hostServer serves, on the host's 127.0.0.1 only, "hello from the host"
// at / and a WebSocket echo at /ws; it returns its port.
func hostServer(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the host") })
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		if _, msg, err := c.ReadMessage(); err == nil {
			c.WriteMessage(websocket.TextMessage, append([]byte("echo: "), msg...))
		}
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// hostEcho reads each connection to its end, then writes it all back and
// closes: only a client's half-close gets it an answer.
func hostEcho(t *testing.T) int {
	return tcptest.Serve(t, "127.0.0.1:0", func(c net.Conn) {
		if all, err := io.ReadAll(c); err == nil {
			c.Write(all)
		}
	}).Port
}

// run runs a command in the sandbox: its stdout, and whether it succeeded.
func run(t *testing.T, m *service.Manager, project, command string) (string, bool) {
	t.Helper()
	out, err := m.Exec(context.Background(), project, service.ExecRequest{Command: command, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return out.Stdout + out.Stderr, out.ExitCode == 0
}

func TestForwardReachesTheHostsServer(t *testing.T) {
	for _, route := range []string{"direct", "exec"} {
		t.Run(route, func(t *testing.T) { testForward(t, route == "exec") })
	}
}

// testForward forwards host servers into a sandbox: over the direct
// route where the engine is local, or over exec relays alone.
func testForward(t *testing.T, execOnly bool) {
	sb := startSandbox(t)
	ctx := context.Background()
	web, echo := hostServer(t), hostEcho(t)
	f := sb.x // it keeps its list in the manager's state
	if execOnly {
		ports.ExecOnly(f)
	}
	url := "http://localhost:8500/"
	if out, ok := run(t, sb.m, sb.project, fetchScript+url); ok {
		t.Fatalf("the host's server answers in the sandbox before the forward: %s", out)
	}
	if got, err := f.ForwardPort(ctx, sb.project, 8500, web); err != nil || got.HostPort != web {
		t.Fatalf("forward: %+v, %v", got, err)
	}
	if got, err := f.ForwardPort(ctx, sb.project, 8501, echo); err != nil {
		t.Fatalf("forward: %+v, %v", got, err)
	}
	if direct := ports.ForwardDirect(f, sb.project, 8500); direct != (!execOnly && localEngine()) {
		t.Errorf("the direct route is taken: %v", direct)
	}
	if out, ok := run(t, sb.m, sb.project, fetchScript+url); !ok || out != "hello from the host" {
		t.Errorf("GET %s in the sandbox: %q", url, out)
	}
	if out, _ := run(t, sb.m, sb.project, wsScript+"8500 'hi there'"); out != "echo: hi there" {
		t.Errorf("WebSocket through the forward: %q", out)
	}
	if out, _ := run(t, sb.m, sb.project, halfCloseScript+"8501"); out != strconv.Itoa(3<<20)+" True" {
		t.Errorf("echo after a half-close in the sandbox: %q", out)
	}
	listed, err := f.ForwardedPorts(sb.project)
	if err != nil || len(listed) != 2 || listed[0] != (ports.Forwarded{Port: 8500, HostPort: web}) {
		t.Errorf("listed: %+v, %v", listed, err)
	}
	kept, _ := filepath.Glob(filepath.Join(sb.m.StateDir(), "forwards", "*.json"))
	if len(kept) != 1 || fileExists(filepath.Join(sb.project, ".pilot", "forwards.json")) {
		t.Errorf("kept in %v", kept)
	}

	t.Run("it comes back after a stop and a start", func(t *testing.T) {
		if _, err := sb.m.Stop(ctx, sb.project); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.m.Start(ctx, sb.project); err != nil {
			t.Fatal(err)
		}
		dockertest.PollExec(t, sb.m, sb.project, "the forward is back", fetchScript+url)
	})
	t.Run("a second sidecar finds it carried and takes it over as the first ends", func(t *testing.T) {
		m2, _ := dockertest.Manager(t, func(c *service.Config) { c.StateDir = sb.m.StateDir(); c.Logger = zerolog.Nop() })
		f2 := carry(t, m2, execOnly)
		dockertest.Run(t, m2)
		for deadline := time.Now().Add(time.Minute); !ports.ForwardCarried(f2, sb.project, 8500); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the second sidecar never found the forward carried by the first")
			}
		}
		if listed, err := f2.ForwardedPorts(sb.project); err != nil || len(listed) != 2 || listed[0].Error != "" || listed[1].Error != "" {
			t.Errorf("the second sidecar lists %+v, %v: the forwards work", listed, err)
		}
		f.Close() // the first sidecar ends: its listeners end with it
		dockertest.PollExec(t, sb.m, sb.project, "the second sidecar took the forward over", fetchScript+url)
		if ports.ForwardCarried(f2, sb.project, 8500) {
			t.Error("still marked carried by another after the take-over")
		}
		f = f2
	})
	t.Run("close removes it", func(t *testing.T) {
		if closed, err := f.CloseForward(sb.project, 8500); !closed || err != nil {
			t.Fatalf("close: %v, %v", closed, err)
		}
		if out, ok := run(t, sb.m, sb.project, fetchScript+url); ok {
			t.Errorf("the host's server still answers after close: %s", out)
		}
		if closed, _ := f.CloseForward(sb.project, 8500); closed {
			t.Error("closed twice")
		}
		if listed, _ := f.ForwardedPorts(sb.project); len(listed) != 1 || listed[0].Port != 8501 {
			t.Errorf("listed after close: %+v", listed)
		}
	})
}

// touchCounter counts the uses a forwarder reports for the idle policy.
type touchCounter struct {
	*service.Manager
	touches atomic.Int32
}

func (c *touchCounter) Touch(project string) {
	c.touches.Add(1)
	c.Manager.Touch(project)
}

func TestForwardIsForItsSandboxOnly(t *testing.T) {
	counter := &touchCounter{}
	sb := startSandboxOf(t, func(m *service.Manager) ports.Sandboxes { counter.Manager = m; return counter })
	ctx := context.Background()
	web := hostServer(t)
	f := sb.x
	if _, err := f.ForwardPort(ctx, sb.project, 8500, web); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.CloseForward(sb.project, 8500) })
	dockertest.PollExec(t, sb.m, sb.project, "the forward answers", fetchScript+"http://localhost:8500/")
	if counter.touches.Load() == 0 {
		t.Error("a forwarded connection is not a use of the sandbox for the idle policy")
	}
	other := dockertest.Project(t, dockertest.Engine(t))
	if _, err := sb.m.Start(ctx, other); err != nil {
		t.Fatal(err)
	}
	// Not on its own localhost, nor at the host's port through its gateway.
	gateway := `$(awk '$2 == "00000000" { h = $3; printf "%d.%d.%d.%d", strtonum("0x" substr(h,7,2)), strtonum("0x" substr(h,5,2)), strtonum("0x" substr(h,3,2)), strtonum("0x" substr(h,1,2)) }' /proc/net/route)`
	for _, url := range []string{"http://localhost:8500/", "http://" + gateway + ":" + strconv.Itoa(web) + "/"} {
		if out, ok := run(t, sb.m, other, fetchScript+`"`+url+`"`); ok {
			t.Errorf("%s answers in another sandbox: %s", url, out)
		}
	}
	// Nor the listener's own address for the direct route (the sandbox
	// network drops traffic between containers).
	if addr := ports.ForwardAddress(f, sb.project, 8500); addr != "" {
		host, port, _ := net.SplitHostPort(addr)
		connect := fmt.Sprintf(`python3 -c 'import socket; socket.create_connection(("%s", %s), timeout=3)'`, host, port)
		if out, ok := run(t, sb.m, other, connect); ok {
			t.Errorf("the listener's direct address %s answers in another sandbox: %s", addr, out)
		}
		if _, ok := run(t, sb.m, sb.project, connect); !ok {
			t.Errorf("the check cannot fail: %s does not answer in its own sandbox either", addr)
		}
	}
}

func TestForwardReachesAServerOnTheHostsIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback on this host: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello over ::1") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	sb := startSandbox(t)
	f := sb.x
	if _, err := f.ForwardPort(context.Background(), sb.project, 8500, ln.Addr().(*net.TCPAddr).Port); err != nil {
		t.Fatal(err)
	}
	if out, ok := run(t, sb.m, sb.project, fetchScript+"http://localhost:8500/"); !ok || out != "hello over ::1" {
		t.Errorf("a server on the host's ::1 only, through the forward: %q", out)
	}
}

func TestForwardRefusesWhatItCannotDo(t *testing.T) {
	sb := startSandbox(t)
	ctx := context.Background()
	f := sb.x
	for _, c := range []struct{ port, hostPort int }{{0, 0}, {65536, 0}, {8500, -1}, {8500, 65536}} {
		if _, err := f.ForwardPort(ctx, sb.project, c.port, c.hostPort); !errors.Is(err, service.ErrInvalidArgument) {
			t.Errorf("port %d, host port %d: %v", c.port, c.hostPort, err)
		}
	}
	sb.background(t, "exec python3 -m http.server 8600 --bind 127.0.0.1", 8600)
	_, err := f.ForwardPort(ctx, sb.project, 8600, 0)
	if !errors.Is(err, service.ErrInvalidArgument) || !strings.Contains(err.Error(), "python3 already listens on port 8600") {
		t.Errorf("a port in use: %v", err)
	}
	if listed, _ := f.ForwardedPorts(sb.project); len(listed) != 0 {
		t.Errorf("refused ports are listed: %+v", listed)
	}
	// On a stopped sandbox a forward is kept for the next start.
	if _, err := sb.m.Stop(ctx, sb.project); err != nil {
		t.Fatal(err)
	}
	for port := 9000; port < 9000+16; port++ {
		if _, err := f.ForwardPort(ctx, sb.project, port, 0); err != nil {
			t.Fatalf("forward %d: %v", port, err)
		}
	}
	if _, err := f.ForwardPort(ctx, sb.project, 8500, 0); !errors.Is(err, service.ErrInvalidArgument) {
		t.Errorf("a 17th port: %v", err)
	}
	if listed, _ := f.ForwardedPorts(sb.project); len(listed) != 16 {
		t.Errorf("listed: %+v", listed)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
