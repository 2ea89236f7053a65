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

	"github.com/pilot-sandbox/pilot-sandbox/relay"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// An exec's stream carries 31 to 172 MB/s from the sandbox (Docker's
// stdout path: the process's pipe, the shim, a FIFO, the engine; measured
// with BenchmarkPorts under load), while the sidecar itself is idle. So
// where the host can reach the container's own address (a local Linux
// engine), an exposed port's connections go straight there: to a
// gateway process in the sandbox (the relay program's gateway role,
// resources/relay/pilot_relay.py) that listens on the container's address,
// lets in only connections that start with the exposure's secret, and
// connects each to 127.0.0.1:PORT inside (so the program may still bind
// to the sandbox's loopback). Where it cannot (Docker Desktop's virtual
// machine, a remote engine, a sandbox without a network), the probe
// fails and the exec relays carry them as before.

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
func (e *exposer) startGateway(ctx context.Context, project string, port int) (*gateway, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	s, err := e.sb.ExecAttachArgv(ctx, project, service.ExecSpec{Cmd: relay.Command(relay.RoleGateway, strconv.Itoa(port))})
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
