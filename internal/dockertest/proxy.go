package dockertest

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
)

// Proxy is a Docker endpoint for tests that stands in front of the real
// engine and can be cut and restored, so that a test can take Docker away
// from a sidecar and give it back without stopping the engine, which
// other tests and people share. Point the sidecar at it with Env (or
// DOCKER_HOST=Host()).
//
// Cut behaves like a dockerd that died: every open connection (event
// streams, exec attachments, calls under way) is dropped, and the socket
// file stays behind refusing connections (ECONNREFUSED), as a crashed
// daemon's does.
//
// NewProxy listens on a unix socket; NewTCPProxy on tcp://127.0.0.1, in the
// clear or with TLS as a remote engine is reached (dockerd --tlsverify).
type Proxy struct {
	t      testing.TB
	host   string                       // the proxy's endpoint
	env    []string                     // what points a client at it
	listen func() (net.Listener, error) // (again, after a Cut)
	target string                       // the real engine: "unix" or "tcp" address
	net    string

	mu    sync.Mutex // guards ln and conns
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup // accept loop and connection copies
}

// NewProxy starts a proxy on a unix socket to the engine the sidecar would
// use (DOCKER_HOST or the usual sockets); the test is skipped or failed as
// Engine decides when there is none. It is closed when the test ends.
func NewProxy(t testing.TB) *Proxy {
	t.Helper()
	p := newProxy(t)
	// Unix socket paths are limited to about 100 bytes: t.TempDir() can be
	// longer.
	dir, err := os.MkdirTemp("", "dockerproxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "docker.sock")
	p.host = "unix://" + path
	p.env = []string{"DOCKER_HOST=" + p.host}
	p.listen = func() (net.Listener, error) {
		os.Remove(path) // the socket file a cut left behind
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			return nil, err
		}
		// Keep the socket file on Cut, so that clients get ECONNREFUSED.
		ln.SetUnlinkOnClose(false)
		return ln, nil
	}
	p.Restore()
	return p
}

// NewTCPProxy starts a proxy on a port of 127.0.0.1, like NewProxy. With
// withTLS it speaks TLS and requires a client certificate, both signed by a
// CA made for the test; Env then carries DOCKER_TLS_VERIFY and
// DOCKER_CERT_PATH (a directory with ca.pem, cert.pem and key.pem) too.
func NewTCPProxy(t testing.TB, withTLS bool) *Proxy {
	t.Helper()
	p := newProxy(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	p.host = "tcp://" + addr
	p.env = []string{"DOCKER_HOST=" + p.host}
	var config *tls.Config
	if withTLS {
		dir := t.TempDir()
		config = testCertificates(t, dir)
		p.env = append(p.env, "DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH="+dir)
	}
	p.listen = func() (net.Listener, error) {
		if ln == nil { // after a Cut: the same port again
			var err error
			if ln, err = net.Listen("tcp", addr); err != nil {
				return nil, err
			}
		}
		l := ln
		ln = nil
		if config != nil {
			return tls.NewListener(l, config), nil
		}
		return l, nil
	}
	p.Restore()
	return p
}

// newProxy is a proxy to the engine that is not listening yet.
func newProxy(t testing.TB) *Proxy {
	t.Helper()
	docker := Engine(t)
	network, address, err := dialAddress(docker.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, target: address, net: network, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// dialAddress turns a Docker endpoint into what net.Dial takes.
func dialAddress(endpoint string) (network, address string, err error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", "", err
	}
	switch u.Scheme {
	case "unix":
		return "unix", u.Path, nil
	case "tcp":
		return "tcp", u.Host, nil
	}
	return "", "", errors.New("dockertest: the proxy supports unix:// and tcp:// engines, not " + endpoint)
}

// Host is the proxy's endpoint, for DOCKER_HOST.
func (p *Proxy) Host() string { return p.host }

// Env is the environment that points a Docker client at the proxy.
func (p *Proxy) Env() []string { return p.env }

// Engine is a client of the engine through the proxy, made as the sidecar
// makes its own: from the environment, which Engine sets for the rest of
// the test (so that a TLS proxy is reached with its certificates).
func (p *Proxy) Engine() *engine.Client {
	for _, kv := range p.env {
		k, v, _ := strings.Cut(kv, "=")
		p.t.Setenv(k, v)
	}
	return engine.New("")
}

// Cut takes Docker away: open connections are dropped and new ones refused.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// Restore gives Docker back: the proxy accepts and forwards again.
func (p *Proxy) Restore() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return
	}
	ln, err := p.listen()
	if err != nil {
		p.t.Fatalf("dockertest: proxy: %v", err)
	}
	p.ln = ln
	p.wg.Go(func() { p.accept(ln) })
}

// accept forwards connections until ln is closed by Cut.
func (p *Proxy) accept(ln net.Listener) {
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.forward(client) })
	}
}

// forward copies one connection both ways until either side closes it.
func (p *Proxy) forward(client net.Conn) {
	server, err := net.Dial(p.net, p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	defer p.untrack(client, server)
	var copies sync.WaitGroup
	copies.Go(func() { io.Copy(server, client); closeWrite(server) })
	copies.Go(func() { io.Copy(client, server); closeWrite(client) })
	copies.Wait()
}

// track records a connection pair, unless the proxy was cut meanwhile.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.conns, c)
	}
}

// closeWrite passes on a half-close: Docker's attach and exec streams use
// them to say that input has ended.
func closeWrite(c net.Conn) {
	if hc, ok := c.(interface{ CloseWrite() error }); ok {
		hc.CloseWrite()
		return
	}
	c.Close()
}
