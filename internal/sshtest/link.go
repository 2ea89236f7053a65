package sshtest

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Link relays TCP from a port of 127.0.0.1 to a target, delaying each
// direction by a fixed time, and drops every connection on demand.
//
// It stands in for a slow network: this machine's kernel has no netem
// (`tc qdisc add ... netem` answers "Specified qdisc kind is unknown"),
// so the delay is added here, to each chunk of bytes as it is read, and
// the chunk is written once its time comes (the later chunks meanwhile
// queue behind it, as packets do on a link). The link's own TCP
// connections are local, so it delays bytes but does not slow TCP's
// window growth as a real long link would: it models a round trip, not a
// bandwidth.
type Link struct {
	ln     net.Listener
	target string
	delay  time.Duration

	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup // the accept loop and the relays
}

// NewLink starts a link to target, closed when the test ends.
func NewLink(t testing.TB, target string, delay time.Duration) *Link {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Link{ln: ln, target: target, delay: delay, conns: map[net.Conn]struct{}{}}
	l.wg.Go(l.accept)
	t.Cleanup(func() {
		ln.Close()
		l.Drop()
		l.wg.Wait()
	})
	return l
}

// Port is the link's port on 127.0.0.1.
func (l *Link) Port() int { return l.ln.Addr().(*net.TCPAddr).Port }

// Addr is the link's address.
func (l *Link) Addr() string { return "127.0.0.1:" + strconv.Itoa(l.Port()) }

// Drop closes every connection on the link, as a network that went away
// would end them; new connections are made as before.
func (l *Link) Drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Close()
	}
}

// Connections is how many connections the link carries now.
func (l *Link) Connections() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns) / 2
}

func (l *Link) accept() {
	for {
		client, err := l.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", l.target)
		if err != nil {
			client.Close()
			continue
		}
		l.mu.Lock()
		l.conns[client], l.conns[server] = struct{}{}, struct{}{}
		l.mu.Unlock()
		l.wg.Go(func() { l.relay(client, server) })
	}
}

// relay carries both directions until both end.
func (l *Link) relay(client, server net.Conn) {
	var wg sync.WaitGroup
	wg.Go(func() { l.carry(server, client) })
	wg.Go(func() { l.carry(client, server) })
	wg.Wait()
	client.Close()
	server.Close()
	l.mu.Lock()
	delete(l.conns, client)
	delete(l.conns, server)
	l.mu.Unlock()
}

// chunk is bytes read, and when they may be written.
type chunk struct {
	data []byte
	due  time.Time
}

// carry copies src to dst, each chunk delay after it was read, then
// half-closes dst.
func (l *Link) carry(dst, src net.Conn) {
	defer func() {
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	if l.delay == 0 {
		io.Copy(dst, src)
		return
	}
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{buf[:n], time.Now().Add(l.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			src.Close()
			for range queue { // let the reader end
			}
			return
		}
	}
}
