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
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// An exec's stream carries 31 to 172 MB/s from the sandbox (Docker's
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
const gatewayScript = `import hmac, os, socket, sys, threading
` + tcpJoin + `
secret = os.read(0, 64).strip()
port = int(sys.argv[1])
l, where = direct_listener()
os.write(1, (where + "\n").encode())
def serve(c):
    if not admitted(c):
        return
    try:
        s = socket.create_connection(("127.0.0.1", port))
    except OSError:
        c.close()
        return
    join(c, s)
def accept():
    while True:
        c, _ = l.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
while os.read(0, 4096):
    pass
`

// tcpJoin is Python for the direct route: direct_listener() listens on a
// free port of every address of the container and says where ("IP PORT",
// its own address as Docker's /etc/hosts gives it); admitted(c) reads the secret
// and a newline from a new connection within 10 s and closes it if they
// are not there; join(a, b) carries bytes both ways between two sockets,
// each side's end passed on as a half-close, and closes both at the end.
const tcpJoin = `def direct_listener():
    l = socket.socket()
    l.bind(("0.0.0.0", 0))
    l.listen(128)
    try:
        ip = socket.gethostbyname(socket.gethostname())
    except OSError:
        ip = "-"
    return l, "%s %d" % (ip, l.getsockname()[1])
def admitted(c):
    c.settimeout(10)
    got = b""
    try:
        while len(got) < len(secret) + 1:
            d = c.recv(len(secret) + 1 - len(got))
            if not d:
                break
            got += d
    except OSError:
        pass
    if not hmac.compare_digest(got, secret + b"\n"):
        c.close()
        return False
    c.settimeout(None)
    return True
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
def join(a, b):
    for x in (a, b):
        x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = threading.Thread(target=pipe, args=(a, b))
    t.start()
    pipe(b, a)
    t.join()
    a.close()
    b.close()
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
	line, err := readLine(ctx, s, bufio.NewReader(s))
	if err == nil {
		g.addr = address(line)
	}
	if err := probe(g.addr); err != nil {
		s.Close()
		return nil, fmt.Errorf("the container's address does not answer from here: %w %s", err, s.Stderr())
	}
	return g, nil
}

// readLine reads a line from r, s's reader, within ctx; s is closed if
// ctx ends first.
func readLine(ctx context.Context, s service.ExecSession, r *bufio.Reader) (string, error) {
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		l, err := r.ReadString('\n')
		got <- read{l, err}
	}()
	select {
	case g := <-got:
		return strings.TrimSpace(g.line), g.err
	case <-ctx.Done():
		s.Close()
		<-got
		return "", ctx.Err()
	}
}

// address reads "IP PORT" as a gateway writes it.
func address(line string) string {
	ip, port, _ := strings.Cut(line, " ")
	return net.JoinHostPort(ip, port)
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
