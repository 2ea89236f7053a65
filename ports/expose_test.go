package ports_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// sandbox is a running sandbox and the carrier of its relays, as a
// sidecar's.
type sandbox struct {
	m       *service.Manager
	project string
	x       *ports.Carrier
}

func startSandbox(t testing.TB) *sandbox {
	return startSandboxOf(t, func(m *service.Manager) ports.Sandboxes { return m })
}

// startSandboxOf starts a sandbox whose carrier runs on sandboxes(m): a
// test's wrapper that counts what the relays report.
func startSandboxOf(t testing.TB, sandboxes func(*service.Manager) ports.Sandboxes) *sandbox {
	t.Helper()
	m, docker := dockertest.Manager(t, func(c *service.Config) { c.Logger = zerolog.Nop() })
	dockertest.Run(t, m)
	project := dockertest.Project(t, docker)
	if _, err := m.Start(context.Background(), project); err != nil {
		t.Fatal(err)
	}
	return &sandbox{m: m, project: project, x: carry(t, sandboxes(m), false)}
}

// carry starts a carrier of sb's sandboxes, closed at the test's end;
// execOnly: over exec relays alone, never the direct route.
func carry(t testing.TB, sb ports.Sandboxes, execOnly bool) *ports.Carrier {
	c := ports.NewCarrier(sb, dockertest.Engine(t), ports.Options{Log: zerolog.Nop()})
	if execOnly {
		ports.ExecOnly(c)
	}
	t.Cleanup(c.Close)
	return c
}

// sh runs a command in the sandbox and returns its stdout, failing the
// test if it fails.
func (sb *sandbox) sh(t testing.TB, command string) string {
	t.Helper()
	out, err := sb.m.Exec(context.Background(), sb.project, service.ExecRequest{Command: command, Timeout: time.Minute})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("%s: %+v, %v", command, out, err)
	}
	return out.Stdout
}

// background starts a server in the sandbox and waits until port listens.
func (sb *sandbox) background(t testing.TB, command string, port int) {
	t.Helper()
	if _, err := sb.m.Background(context.Background(), sb.project, service.ExecRequest{Command: command}); err != nil {
		t.Fatal(err)
	}
	dockertest.PollExec(t, sb.m, sb.project, "port "+strconv.Itoa(port)+" listens", "exec 3<>/dev/tcp/127.0.0.1/"+strconv.Itoa(port))
}

// echoServer answers each connection with what it read, up to the
// client's end of input, then closes.
const echoServer = `python3 -c '
import socket
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 8801)); l.listen()
while True:
    c, _ = l.accept()
    while True:
        d = c.recv(65536)
        if not d: break
        c.sendall(d)
    c.close()
'`

// localEngine says whether the engine runs on this Linux machine, where
// the host reaches a container's own address (the direct route).
func localEngine() bool {
	host := os.Getenv("DOCKER_HOST")
	return runtime.GOOS == "linux" && (host == "" || strings.HasPrefix(host, "unix://"))
}

func TestExposedPortCarriesASandboxServer(t *testing.T) {
	for _, route := range []string{"direct", "exec"} {
		t.Run(route, func(t *testing.T) { testExposedPort(t, route == "exec") })
	}
}

// testExposedPort exposes servers of the sandbox: over the direct route
// where the engine is local, or over exec relays alone.
func testExposedPort(t *testing.T, execOnly bool) {
	sb := startSandbox(t)
	if execOnly {
		ports.ExecOnly(sb.x)
	}
	ctx := context.Background()
	sum := strings.Fields(sb.sh(t, `mkdir -p /tmp/site && head -c 52428800 /dev/urandom >/tmp/site/big.bin && sha256sum /tmp/site/big.bin`))[0]
	sb.background(t, "cd /tmp/site && exec python3 -m http.server 8800 --bind 127.0.0.1", 8800)
	sb.background(t, echoServer, 8801)

	listening, err := sb.x.ListeningPorts(ctx, sb.project)
	if err != nil || !hasListener(listening, 8800, "python3") || !hasListener(listening, 8801, "python3") {
		t.Errorf("listening: %+v, %v", listening, err)
	}
	exposed, err := sb.x.ExposePort(ctx, sb.project, 8800)
	if err != nil || exposed.URL != "http://127.0.0.1:"+strconv.Itoa(exposed.HostPort)+"/" {
		t.Fatalf("expose: %+v, %v", exposed, err)
	}
	if again, _ := sb.x.ExposePort(ctx, sb.project, 8800); again != exposed {
		t.Errorf("exposed again: %+v, first %+v", again, exposed)
	}
	if direct := ports.Direct(sb.x, sb.project, 8800); direct != (!execOnly && localEngine()) {
		t.Errorf("the direct route is taken: %v", direct)
	}
	// Only the user's servers: not the desktop's, the proxy's, nor the
	// exposure's own relay (the desktop user's, on the direct route).
	listening, err = sb.x.ListeningPorts(ctx, sb.project)
	if err != nil || len(listening) != 2 || !hasListener(listening, 8800, "python3") || !hasListener(listening, 8801, "python3") {
		t.Errorf("listening once exposed: %+v, %v", listening, err)
	}

	started := time.Now()
	got := download(t, exposed.URL+"big.bin")
	t.Logf("50 MiB through the exposed port in %s", time.Since(started).Round(time.Millisecond))
	if got != sum {
		t.Errorf("sha256 %s through the exposed port, %s in the sandbox", got, sum)
	}

	t.Run("each side's end reaches the other", func(t *testing.T) {
		echo, err := sb.x.ExposePort(ctx, sb.project, 8801)
		if err != nil {
			t.Fatal(err)
		}
		halfClose(t, echo.HostPort)
	})
	t.Run("a client that goes away ends its relay", func(t *testing.T) {
		conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(exposed.HostPort))
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		io.ReadFull(conn, make([]byte, 12)) // "HTTP/1.0 200": the relay runs
		conn.Close()
		// No connection to 8800 (0x2260) is left open inside.
		dockertest.PollExec(t, sb.m, sb.project, "the relay's connection ends", `! awk '$3 ~ /:2260$/ && $4 == "01"' /proc/net/tcp | grep -q .`)
	})
	t.Run("close ends it", func(t *testing.T) {
		if closed, err := sb.x.ClosePort(sb.project, 8800); !closed || err != nil {
			t.Errorf("close: %v, %v", closed, err)
		}
		if closed, _ := sb.x.ClosePort(sb.project, 8800); closed {
			t.Error("closed twice")
		}
		if _, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(exposed.HostPort)); err == nil {
			t.Error("the host port still answers after close")
		}
		dockertest.PollExec(t, sb.m, sb.project, "no relay to 8800 waits", `! ps -eo args= | grep -q '^python3 -S -c.* 8800$'`)
	})
	t.Run("a stop ends the others", func(t *testing.T) {
		echo := sb.x.ExposedPorts(sb.project)
		if len(echo) != 1 || echo[0].Port != 8801 {
			t.Fatalf("exposed: %+v", echo)
		}
		if _, err := sb.m.Stop(ctx, sb.project); err != nil {
			t.Fatal(err)
		}
		pollHost(t, "the exposed port closes with the sandbox", func() bool {
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(echo[0].HostPort))
			if err == nil {
				c.Close()
			}
			return err != nil && len(sb.x.ExposedPorts(sb.project)) == 0
		})
	})
}

func TestExposeRefusesWhatItCannotCarry(t *testing.T) {
	sb := startSandbox(t)
	if _, err := sb.x.ExposePort(context.Background(), sb.project, 0); !errors.Is(err, service.ErrInvalidArgument) {
		t.Errorf("port 0: %v", err)
	}
	if _, err := sb.m.Stop(context.Background(), sb.project); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.x.ExposePort(context.Background(), sb.project, 8800); !errors.Is(err, service.ErrNotRunning) {
		t.Errorf("a stopped sandbox: %v", err)
	}
	if len(sb.x.ExposedPorts(sb.project)) != 0 {
		t.Error("a refused port is listed")
	}
}

// halfClose writes to the echo server through port, ends its input, and
// expects everything back, then the end of the connection.
func halfClose(t *testing.T, port int) {
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measure
	msg := strings.Repeat("echo through the sandbox\n", 40000)
	go func() {
		io.WriteString(conn, msg)
		conn.(*net.TCPConn).CloseWrite()
	}()
	back, err := io.ReadAll(conn)
	if err != nil || string(back) != msg {
		t.Errorf("echoed %d of %d bytes, then %v", len(back), len(msg), err)
	}
}

func download(t testing.TB, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, res.Body); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %s, %v", url, res.Status, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hasListener(ls []ports.Listening, port int, process string) bool {
	for _, l := range ls {
		if l.Port == port && l.Process == process {
			return true
		}
	}
	return false
}

// pollHost waits up to 20 s for cond.
func pollHost(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 20s", what)
		}
	}
}

// touchRecorder counts the uses an exposer reports for the idle policy.
type touchRecorder struct {
	*service.Manager
	touches atomic.Int32
}

func (c *touchRecorder) Touch(project string) {
	c.touches.Add(1)
	c.Manager.Touch(project)
}

func TestExposedConnectionIsAUse(t *testing.T) {
	counter := &touchRecorder{}
	sb := startSandboxOf(t, func(m *service.Manager) ports.Sandboxes { counter.Manager = m; return counter })
	sb.background(t, "mkdir -p /tmp/site && cd /tmp/site && exec python3 -m http.server 8800 --bind 127.0.0.1", 8800)
	exposed, err := sb.x.ExposePort(context.Background(), sb.project, 8800)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.x.ClosePort(sb.project, 8800) })
	before := counter.touches.Load()
	download(t, exposed.URL)
	if counter.touches.Load() == before {
		t.Error("a connection to an exposed port is not a use of the sandbox for the idle policy")
	}
}
