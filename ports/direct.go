package ports

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// An exec's stream carries 40 to 90 MB/s from the sandbox (Docker's
// stdout path: the process's pipe, the shim, a FIFO, the engine; measured
// with BenchmarkPorts under load), while the sidecar itself is idle. So
// where the host can reach the container's own address (a local Linux
// engine), an exposed port's connections go straight there: to a
// gateway process in the sandbox that listens on the container's address,
// lets in only connections that start with the exposure's secret, and
// connects each to 127.0.0.1:PORT inside (so the program may still bind
// to the sandbox's loopback). Where it cannot (Docker Desktop's virtual
// machine, a remote engine, a sandbox without a network), the probe
// fails and the exec relays carry them as before.

// gatewayScript reads the secret from stdin, listens on a free port of
// every address of the container, writes "IP PORT" (its own address as
// Docker's /etc/hosts gives it), and carries each connection that sends
// the secret and a newline to 127.0.0.1:PORT, with each side's end passed
// on as a half-close. It ends with its stdin.
const gatewayScript = `import fcntl, hmac, os, socket, sys, threading
secret = os.read(0, 64).strip()
port = int(sys.argv[1])
l = socket.socket()
l.bind(("0.0.0.0", 0))
l.listen(128)
try:
    ip = socket.gethostbyname(socket.gethostname())
except OSError:
    ip = "-"
os.write(1, ("%s %d\n" % (ip, l.getsockname()[1])).encode())
def pipe(a, b):
    try:
        while True:
            d = a.recv(262144)
            if not d:
                break
            b.sendall(d)
        b.shutdown(socket.SHUT_WR)
    except OSError:
        a.close()
        b.close()
def serve(c):
    c.settimeout(10)
    got = b""
    try:
        while len(got) < len(secret) + 1:
            d = c.recv(len(secret) + 1 - len(got))
            if not d:
                break
            got += d
        if not hmac.compare_digest(got, secret + b"\n"):
            c.close()
            return
        c.settimeout(None)
        s = socket.create_connection(("127.0.0.1", port))
    except OSError:
        c.close()
        return
    for x in (c, s):
        x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = threading.Thread(target=pipe, args=(c, s))
    t.start()
    pipe(s, c)
    t.join()
    c.close()
    s.close()
def accept():
    while True:
        c, _ = l.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
while os.read(0, 4096):
    pass
`

// probeTimeout bounds the probe of the container's address: on a local
// engine it answers in well under a millisecond.
const probeTimeout = 500 * time.Millisecond

// gateway is a running gateway the host can reach.
type gateway struct {
	session service.ExecSession
	addr    string // IP:PORT of the container
	secret  string
}

// startGateway starts a gateway to port in the project's sandbox and
// returns it if the host can reach it; nil (and the reason) if not.
func (e *Exposer) startGateway(ctx context.Context, project string, port int) (*gateway, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	s, err := e.sb.ExecAttachArgv(ctx, project, service.ExecSpec{Cmd: []string{"python3", "-S", "-c", gatewayScript, strconv.Itoa(port)}})
	if err != nil {
		return nil, err
	}
	g := &gateway{session: s, secret: rand.Text()}
	if _, err := io.WriteString(s, g.secret+"\n"); err != nil {
		s.Close()
		return nil, err
	}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(s).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		ip, p, _ := strings.Cut(strings.TrimSpace(l), " ")
		g.addr = net.JoinHostPort(ip, p)
	case <-ctx.Done():
	}
	if err := probe(g.addr); err != nil {
		s.Close()
		return nil, fmt.Errorf("the container's address does not answer from here: %w %s", err, s.Stderr())
	}
	return g, nil
}

// probe connects to the gateway and leaves at once (the gateway drops a
// connection without the secret).
func probe(addr string) error {
	if strings.HasPrefix(addr, "-") || strings.HasPrefix(addr, ":") {
		return fmt.Errorf("no address: %q", addr)
	}
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return err
	}
	return c.Close()
}

// dial connects to the gateway and sends the secret: the connection then
// reaches the port in the sandbox.
func (g *gateway) dial() (*net.TCPConn, error) {
	c, err := net.DialTimeout("tcp", g.addr, dialTimeout)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, g.secret+"\n"); err != nil {
		c.Close()
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// pumpTCP carries bytes both ways between two TCP connections, passing
// each side's end on as a half-close, and closes both once both are done.
func pumpTCP(a, b *net.TCPConn) {
	var wg sync.WaitGroup
	half := func(dst, src *net.TCPConn) {
		if _, err := io.Copy(dst, src); err != nil {
			dst.Close()
			src.Close()
			return
		}
		dst.CloseWrite()
	}
	wg.Go(func() { half(b, a) })
	half(a, b)
	wg.Wait()
	a.Close()
	b.Close()
}
