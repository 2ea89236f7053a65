package ports

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
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

// startGateway starts a gateway to port in t's container and returns it
// if the host can reach it; nil (and the reason) if not.
func (e *exposer) startGateway(ctx context.Context, t service.RelayTarget, port int) (*gateway, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	s, err := e.docker.ExecAttach(ctx, t.ContainerID, helper(t, relay.RoleGateway, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	g := &gateway{session: s, secret: rand.Text()}
	if _, err := io.WriteString(s, g.secret+"\n"); err != nil {
		s.Close()
		return nil, err
	}
	line, err := readLine(ctx, s, lineReader(s))
	if err == nil {
		g.addr, err = directAddress(t, line)
	}
	if err == nil {
		err = probe(g.addr)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("the container's address does not answer from here: %w %s", err, s.Stderr())
	}
	return g, nil
}

// lineReader reads what a relay of the listen or gateway role says: a
// line no longer than maxLine, then the listener's notices.
func lineReader(s service.ExecSession) *bufio.Reader { return bufio.NewReaderSize(s, maxLine) }

// maxLine bounds the line a relay writes: "+PORT" and a newline.
const maxLine = 64

// readLine reads a line from r, s's reader from lineReader, within ctx;
// s is closed if ctx ends first.
func readLine(ctx context.Context, s service.ExecSession, r *bufio.Reader) (string, error) {
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		l, err := r.ReadSlice('\n') // at most the reader's buffer
		got <- read{string(l), err}
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

// directAddress is where the direct route of a relay in t's container
// listens: the container's own address, as the engine gives it, and the
// port of the relay's line ("+PORT"). Nothing else of what the sandbox
// writes is taken: a program in it must not choose what the sidecar dials
// (issue 28, N1).
func directAddress(t service.RelayTarget, line string) (string, error) {
	if !t.Address.IsValid() {
		return "", errors.New("the engine gives the container no address")
	}
	port, err := strconv.Atoi(strings.TrimPrefix(line, "+"))
	if err != nil || port < 1 || port > 65535 {
		return "", fmt.Errorf("the relay said %q, not a port", line)
	}
	return netip.AddrPortFrom(t.Address, uint16(port)).String(), nil
}

// probe connects to the gateway and leaves at once (the gateway drops a
// connection without the secret).
func probe(addr string) error {
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
