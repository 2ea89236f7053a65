package dockertest

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
)

// Proxy is a Docker endpoint for tests that stands in front of the real
// engine and can be cut and restored, so that a test can take Docker away
// from a sidecar and give it back without stopping the engine, which
// other tests and people share. Point the sidecar at Host() with
// DOCKER_HOST.
//
// Cut behaves like a dockerd that died: every open connection (event
// streams, exec attachments, calls under way) is dropped, and the socket
// file stays behind refusing connections (ECONNREFUSED), as a crashed
// daemon's does.
type Proxy struct {
	t      testing.TB
	path   string // the proxy's unix socket
	target string // the real engine: "unix" or "tcp" address
	net    string

	mu    sync.Mutex // guards ln and conns
	ln    *net.UnixListener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup // accept loop and connection copies
}

// NewProxy starts a proxy to the engine the sidecar would use (DOCKER_HOST
// or the usual sockets); the test is skipped or failed as Engine decides
// when there is none. It is closed when the test ends.
func NewProxy(t testing.TB) *Proxy {
	t.Helper()
	docker := Engine(t)
	network, address, err := dialAddress(docker.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	// Unix socket paths are limited to about 100 bytes: t.TempDir() can be
	// longer.
	dir, err := os.MkdirTemp("", "dockerproxy")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, path: filepath.Join(dir, "docker.sock"), target: address, net: network, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
		os.RemoveAll(dir)
	})
	p.Restore()
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
func (p *Proxy) Host() string { return "unix://" + p.path }

// Engine is a client of the engine through the proxy.
func (p *Proxy) Engine() *engine.Client { return engine.New(p.Host()) }

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
	os.Remove(p.path) // the socket file a cut left behind
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.path, Net: "unix"})
	if err != nil {
		p.t.Fatalf("dockertest: proxy: %v", err)
	}
	// Keep the socket file on Cut, so that clients get ECONNREFUSED.
	ln.SetUnlinkOnClose(false)
	p.ln = ln
	p.wg.Go(func() { p.accept(ln) })
}

// accept forwards connections until ln is closed by Cut.
func (p *Proxy) accept(ln *net.UnixListener) {
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
