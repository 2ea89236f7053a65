package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	docker "github.com/fsouza/go-dockerclient"
)

// How a connection to a remote engine is made, and what each way costs
// (measured on this machine through an sshd on 127.0.0.1; numbers in
// docs/performance.md, "A remote engine"):
//
//   - one ssh per connection, each logging in: a new login every time
//     (0.5 s here, more over a real link). Not done.
//   - one master connection (ControlMaster) and, per connection, an ssh
//     that opens a channel on it and runs `docker system dial-stdio`
//     there: no login, but an ssh here and a shell and a docker CLI
//     process there for each connection, alive as long as it is open
//     (0.2 to 0.4 s each here, mostly the remote shell's start).
//   - one master, and the engine's socket on the remote forwarded to a
//     socket here (ssh -O forward -L): a connection is a channel on the
//     master and nothing else, no process on either side (as fast as the
//     local socket, plus the link's round trip).
//
// The dialer uses the third where it can: the remote's docker CLI names
// its engine as a unix:// socket (docker context inspect, run once per
// master) and the remote's sshd allows forwarding it. Otherwise (an
// engine the remote reaches over TCP or ssh, or AllowStreamLocalForwarding
// no) it uses the second. The sockets live in the user's own directory
// (sshDir), named by the target, so every process of the user shares one
// master and one forwarded socket.

// routeMode is how connections are made.
type routeMode int

const (
	routeNone    routeMode = iota // not set up yet, or lost
	routeForward                  // the engine's socket, forwarded by the master
	routeStdio                    // docker system dial-stdio per connection
)

// sshDialer makes connections to a remote engine. It is the library's
// Dialer (for attach and exec streams) and its HTTP transport's dial.
type sshDialer struct {
	target  sshTarget
	ssh     string // the ssh command ("ssh", on PATH)
	control string // the master's control socket
	local   string // where the engine's socket is forwarded to

	mu      sync.Mutex // guards the fields below; held while setting up
	mode    routeMode
	remote  string // the engine's endpoint on the remote, as its docker CLI names it
	lastErr error  // the last set-up's failure, answered again for a moment
	lastTry time.Time
	// transports are the HTTP transports of the clients made with d,
	// whose idle connections a drop ends.
	transports []*http.Transport
}

// retryAfter is how long a failed set-up is answered again without
// trying: a burst of calls while the link is down runs one ssh, not one
// each.
const retryAfter = time.Second

// newSSHDialer returns a dialer for the ssh:// endpoint; nothing runs
// until the first connection.
func newSSHDialer(endpoint string) (*sshDialer, error) {
	t, err := parseSSH(endpoint)
	if err != nil {
		return nil, err
	}
	dir, err := sshDir()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(dir, t.key())
	return &sshDialer{target: t, ssh: "ssh", control: base + ".ctl", local: base + ".sock"}, nil
}

// Dial is go-dockerclient's Dialer: the network and address are the
// library's placeholder, and ignored.
func (d *sshDialer) Dial(_, _ string) (net.Conn, error) {
	return d.DialContext(context.Background(), "", "")
}

// DialContext makes a connection to the remote engine, setting up the
// route first when there is none, or when the one there was is gone (the
// link dropped and the master ended): a drop fails the calls under way,
// and the next call connects again.
func (d *sshDialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	d.mu.Lock()
	mode := d.mode
	d.mu.Unlock()
	switch mode {
	case routeForward:
		if c, err := d.dialForwarded(ctx); err == nil {
			return c, nil
		}
	case routeStdio:
		// ssh itself starts a new master when the old one is gone.
		return d.dialStdio(ctx)
	}
	mode, err := d.setUp(ctx, mode)
	if err != nil {
		return nil, err
	}
	if mode == routeStdio {
		return d.dialStdio(ctx)
	}
	return d.dialForwarded(ctx)
}

// setUp chooses the route, unless another call did since it saw stale.
func (d *sshDialer) setUp(ctx context.Context, stale routeMode) (routeMode, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mode != stale {
		return d.mode, nil
	}
	if d.lastErr != nil && time.Since(d.lastTry) < retryAfter {
		return routeNone, d.lastErr
	}
	d.mode, d.lastErr, d.lastTry = routeNone, nil, time.Now()
	// A login is not cut short by the call that happened to need it (a
	// status check gives up after 5 s): the calls after it use it. ssh's
	// own timeouts bound it (run).
	ctx = context.WithoutCancel(ctx)
	// Another process of the user may have forwarded the socket already.
	if ping(ctx, d.local) == nil {
		d.mode = routeForward
		return d.mode, nil
	}
	remote, err := d.remoteEngine(ctx)
	if err != nil {
		d.lastErr = err
		return routeNone, err
	}
	d.remote = remote
	d.mode = routeStdio
	if path, ok := strings.CutPrefix(remote, "unix://"); ok && d.forward(ctx, path) == nil {
		d.mode = routeForward
	}
	return d.mode, nil
}

// remoteEngine asks the remote's docker CLI which engine it uses, logging
// in (and starting the master) if no master runs. A CLI too old to have
// contexts uses the default socket.
func (d *sshDialer) remoteEngine(ctx context.Context) (string, error) {
	out, err := d.run(ctx, nil, "docker", "context", "inspect", "--format", "'{{.Endpoints.docker.Host}}'")
	var se *sshError
	if errors.As(err, &se) && se.status > 0 && se.status != 127 && se.status != 255 {
		// The command ran and failed: a CLI without contexts.
		return "unix:///var/run/docker.sock", nil
	}
	if err != nil {
		return "", err
	}
	// A login script may print more: the endpoint is the last line.
	return lastLine(strings.Split(out, "\n")), nil
}

// forward has the master forward the remote engine's socket at path to
// d.local, and checks that the engine answers through it: the remote's
// sshd may refuse to forward sockets, which shows only when a connection
// is made.
func (d *sshDialer) forward(ctx context.Context, path string) error {
	if _, err := d.run(ctx, []string{"-O", "forward", "-L", d.local + ":" + path}); err != nil {
		return err
	}
	if err := ping(ctx, d.local); err != nil {
		_, _ = d.run(ctx, []string{"-O", "cancel", "-L", d.local + ":" + path})
		return err
	}
	return nil
}

// dialUnix connects to a Unix socket.
func dialUnix(ctx context.Context, path string) (*net.UnixConn, error) {
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// dialForwarded connects through the forwarded socket.
func (d *sshDialer) dialForwarded(ctx context.Context) (net.Conn, error) {
	c, err := dialUnix(ctx, d.local)
	if err != nil {
		return nil, err
	}
	return forwardedConn{c, d}, nil
}

// errDropped is a connection to the engine that ended because its ssh
// connection did.
var errDropped = errors.New("the ssh connection dropped")

// masterAlive says whether the master still listens on its control
// socket (it removes the socket as it ends).
func (d *sshDialer) masterAlive() bool {
	c, err := net.DialTimeout("unix", d.control, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// ping checks that an engine answers at the socket: GET /_ping.
func ping(ctx context.Context, path string) error {
	c, err := dialUnix(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	if _, err := fmt.Fprint(c, "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReaderSize(c, 256).ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("the engine does not answer through the forwarded socket: %w", err)
	}
	if fields := strings.Fields(string(line)); len(fields) < 2 || fields[1] != "200" {
		return fmt.Errorf("the engine answered %q through the forwarded socket", strings.TrimSpace(string(line)))
	}
	return nil
}

// Route says how the engine is reached, for doctor.
func (d *sshDialer) Route() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	how := "ssh to " + d.target.String() + ", over one master connection (ControlPath " + d.control + ")"
	switch d.mode {
	case routeForward:
		return how + ": the engine's socket (" + orDefault(d.remote, "as forwarded by another process") + ") forwarded to " + d.local
	case routeStdio:
		return how + ": `docker system dial-stdio` there for each connection (the engine is " + d.remote + ")"
	}
	return how + ": not connected yet"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sshPlaceholder is the endpoint the library is given for an ssh://
// engine: a unix:// one, so that it sends its requests as to a local
// socket (no host in the URL, no TLS) and dials them all through its
// Dialer, which is the ssh dialer.
const sshPlaceholder = "unix:///pilot-sandbox/ssh"

// client is a library client whose every connection, its HTTP requests
// and its attach and exec streams alike, is made by d.
func (d *sshDialer) client(apiVersion string) (*docker.Client, error) {
	c, err := docker.NewVersionedClient(sshPlaceholder, apiVersion)
	if err != nil {
		return nil, err
	}
	c.Dialer = d
	// The library's transport for a socket opens a connection per
	// request, which over ssh would cost a channel (and the link's round
	// trip) each time: keep them open for the next request instead.
	tr := &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     time.Minute,
	}
	c.HTTPClient.Transport = tr
	d.mu.Lock()
	d.transports = append(d.transports, tr)
	d.mu.Unlock()
	return c, nil
}

// dropped is told that a connection ended with its ssh connection: the
// idle ones went with it, and the next request must not be sent on one
// (a request already written is not sent again).
func (d *sshDialer) dropped() {
	d.mu.Lock()
	transports := d.transports
	d.mu.Unlock()
	for _, tr := range transports {
		tr.CloseIdleConnections()
	}
}
