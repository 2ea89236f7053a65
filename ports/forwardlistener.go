package ports

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/relay"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// A forwarded port is a listener process in the sandbox (the relay
// program's listen role, resources/relay/pilot_relay.py) and, for each
// connection it accepts, a relay process (its take role) that takes the
// accepted socket from the listener over a Unix socket (SCM_RIGHTS) and
// carries its bytes over its own stdin and stdout: the sidecar's end is
// an attached exec of each, so the sandbox needs no route to the host,
// and a remote engine works the same. The listener's stdout tells the
// sidecar of each connection ("c"), so that it starts a relay for it;
// relays are also started ahead, so that a connection does not wait for
// an exec to start.

// Bounds of a forwarded port.
const (
	// maxForwardConns is how many connections one forwarded port carries
	// at once; more wait in the sandbox's listener, up to
	// maxForwardQueue, and past that are closed at once.
	maxForwardConns = 64
	maxForwardQueue = 64
	// dialTimeout bounds the connection to the host's port.
	dialTimeout = 10 * time.Second
	// touchEvery is how often a forwarded port that moves bytes marks the
	// sandbox as in use (the idle policy).
	touchEvery = 10 * time.Second
	// warmForwardRelays is how many relays wait for a forwarded port's
	// next connection: one, as each is a process in the sandbox.
	warmForwardRelays = 1
)

// listener is a forwarded port's listener process in a running sandbox,
// and the relays of its connections.
type listener struct {
	Forwarded
	target service.RelayTarget // the run it listens in
	name   string              // the abstract Unix socket its relays take connections from
	ctl    service.ExecSession
	f      *forwarder
	moved  atomic.Bool // bytes went through since the last touch
	inner  bool        // the sidecar's own (inner.go), set before it is live

	mu       sync.Mutex // guards the rest, and HostPort
	direct   *gateway   // the direct route to the listener, if the host reaches it
	sessions map[service.ExecSession]struct{}
	conns    map[net.Conn]struct{} // direct connections
	closed   bool
	pending  int // connections reported and not yet taken by a relay
	idle     int // relays started or starting, not yet given a connection
	active   int // relays carrying a connection
	done     chan struct{}
}

// errNoDirect: the direct route was given up.
var errNoDirect = errors.New("the direct route failed before")

// errInUse: something listens on the port in the sandbox already.
var errInUse = errors.New("in use")

// startListener starts fw's listener in t's container and returns once
// it listens.
func (f *forwarder) startListener(ctx context.Context, t service.RelayTarget, fw Forwarded) (*listener, error) {
	l := &listener{
		Forwarded: fw, target: t, f: f, name: "pilot-forward-" + strconv.Itoa(fw.Port) + "-" + rand.Text()[:12],
		sessions: map[service.ExecSession]struct{}{}, conns: map[net.Conn]struct{}{}, done: make(chan struct{}),
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	ctl, err := f.docker.ExecAttach(ctx, t.ContainerID, helper(t, relay.RoleListen, strconv.Itoa(fw.Port), l.name, strconv.Itoa(maxForwardQueue), carryName(fw)))
	if err != nil {
		return nil, err
	}
	secret := rand.Text()
	r := lineReader(ctl)
	line, err := "", error(nil)
	if _, err = io.WriteString(ctl, secret+"\n"); err == nil {
		line, err = readLine(ctx, ctl, r)
	}
	if err == nil && !strings.HasPrefix(line, "+") {
		err = fmt.Errorf("it wrote %q", line)
	}
	if err != nil {
		ctl.Close()
		switch {
		case strings.HasPrefix(ctl.Stderr(), "in use"):
			return nil, errInUse
		case strings.HasPrefix(ctl.Stderr(), "carried"):
			return nil, errCarried
		}
		return nil, fmt.Errorf("the port's listener in the sandbox did not start: %w %s", err, ctl.Stderr())
	}
	l.ctl = ctl
	if addr, err := directAddress(t, line); err == nil && !f.execOnly && probe(addr) == nil {
		l.direct = &gateway{addr: addr, secret: secret}
	}
	go l.follow(r)
	go l.touching()
	l.refill()
	return l, nil
}

// follow reads the listener's notices of connections until it ends, and
// starts a relay for each.
func (l *listener) follow(r *bufio.Reader) {
	var err error
	for {
		var b byte
		if b, err = r.ReadByte(); err != nil {
			break
		}
		if b == 'c' {
			l.mu.Lock()
			l.pending++
			l.mu.Unlock()
			l.refill()
		}
	}
	l.close()
	l.f.ended(l, err)
}

// refill starts relays until there is one for each connection waiting
// (within the bound) and warmForwardRelays more.
func (l *listener) refill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if l.direct != nil {
		for ; l.pending > 0 && l.active < maxForwardConns; l.pending, l.active = l.pending-1, l.active+1 {
			go l.carryDirect()
		}
		return
	}
	want := min(max(l.pending, 0), maxForwardConns-l.active) + warmForwardRelays
	for ; l.idle < want; l.idle++ {
		go l.relay()
	}
}

// carryDirect takes a connection from the listener over the direct route
// and connects it to the host's port.
func (l *listener) carryDirect() {
	defer func() {
		l.mu.Lock()
		l.active--
		l.mu.Unlock()
		l.refill()
	}()
	l.mu.Lock()
	direct := l.direct
	l.mu.Unlock()
	err := errNoDirect
	var inside *net.TCPConn
	if direct != nil { // another connection's failure may have dropped it
		inside, err = direct.dial()
	}
	if err != nil {
		// Exec relays take this connection and the next ones.
		l.f.log.Info().Err(err).Int("port", l.Port).Msg("forwarded port: no direct route; exec relays carry it")
		l.mu.Lock()
		l.direct = nil
		l.pending++
		l.mu.Unlock()
		return
	}
	if !l.trackConn(inside) {
		inside.Close()
		return
	}
	defer l.untrackConn(inside)
	l.f.sb.Touch(l.target.Project)
	host, err := dialHost(l.hostPort())
	if err != nil {
		l.f.log.Info().Err(err).Int("port", l.Port).Msg("forwarded port: the host's port does not answer")
		inside.Close()
		return
	}
	relay.Join(host.(*net.TCPConn), used{inside, &l.moved})
}

// relay starts one relay, waits until it has a connection, and carries it.
func (l *listener) relay() {
	s, err := l.f.docker.ExecAttach(context.Background(), l.target.ContainerID, helper(l.target, relay.RoleTake, l.name))
	if err == nil && !l.track(s) {
		s.Close()
		err = net.ErrClosed
	}
	if err == nil {
		if rerr := relay.Ready(s); rerr != nil {
			err = fmt.Errorf("the relay ended before a connection: %w", rerr)
		}
	}
	l.mu.Lock()
	l.idle--
	if err == nil {
		l.pending--
		l.active++
	}
	l.mu.Unlock()
	if err != nil {
		if s != nil {
			l.untrack(s)
		}
		return // the sandbox or the listener is going: nothing to refill
	}
	l.refill()
	l.carry(s)
	l.mu.Lock()
	l.active--
	l.mu.Unlock()
	l.untrack(s)
	l.refill()
}

// carry connects a relay's connection to the host's port.
func (l *listener) carry(s service.ExecSession) {
	l.f.sb.Touch(l.target.Project)
	conn, err := dialHost(l.hostPort())
	if err != nil {
		l.f.log.Info().Err(err).Int("port", l.Port).Msg("forwarded port: the host's port does not answer")
		s.Close()
		return
	}
	relay.Join(conn.(*net.TCPConn), used{relay.NewConn(s), &l.moved})
}

// dialHost connects to the host's loopback port: 127.0.0.1, or [::1] if
// nothing answers there, since a dev server told to listen on
// "localhost" may take only the IPv6 one (Node 17 and later, where
// localhost resolves to ::1 first).
func dialHost(port int) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dialTimeout)
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		return conn, err
	}
	if conn6, err6 := net.DialTimeout("tcp", net.JoinHostPort("::1", strconv.Itoa(port)), dialTimeout); err6 == nil {
		return conn6, nil
	}
	return nil, err
}

// touching marks the sandbox as in use every touchEvery while bytes go
// through the port, until it closes.
func (l *listener) touching() {
	t := time.NewTicker(touchEvery)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
			if l.moved.Swap(false) {
				l.f.sb.Touch(l.target.Project)
			}
		}
	}
}

func (l *listener) track(s service.ExecSession) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.sessions[s] = struct{}{}
	return true
}

func (l *listener) trackConn(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *listener) untrackConn(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
}

// used marks that bytes went through a forwarded connection. It embeds
// nothing, so that copies go through its Read and Write.
type used struct {
	c     relay.HalfConn
	moved *atomic.Bool
}

func (u used) Read(p []byte) (int, error) {
	u.moved.Store(true)
	return u.c.Read(p)
}

func (u used) Write(p []byte) (int, error) {
	u.moved.Store(true)
	return u.c.Write(p)
}

func (u used) Close() error      { return u.c.Close() }
func (u used) CloseWrite() error { return u.c.CloseWrite() }

// ReadFrom lets the connection read in its own sizes (a relay.Conn puts
// up to relay.Chunk in a frame, where io.Copy's buffer would make frames
// of 32 KiB), marking each read.
func (u used) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(u.c, usedReader{r, u.moved})
}

type usedReader struct {
	r     io.Reader
	moved *atomic.Bool
}

func (u usedReader) Read(p []byte) (int, error) {
	u.moved.Store(true)
	return u.r.Read(p)
}

func (l *listener) untrack(s service.ExecSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sessions, s)
}

// close ends the listener in the sandbox, its waiting relays (with it)
// and every connection it carries.
func (l *listener) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	close(l.done)
	l.ctl.Close()
	for s := range l.sessions {
		s.Close()
	}
	clear(l.sessions)
	for c := range l.conns {
		c.Close()
	}
	clear(l.conns)
}
