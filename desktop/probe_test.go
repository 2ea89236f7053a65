package desktop

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeNoVNC is what answers on a sandbox's noVNC port: the page at
// /vnc.html, and websockify at /websockify, both as the test makes them.
// Whatever is in the sandbox can serve this port instead of websockify.
func fakeNoVNC(t *testing.T, page http.HandlerFunc, ws func(conn net.Conn, rw *bufio.ReadWriter)) (host string, port int) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/vnc.html", page)
	mux.HandleFunc("/websockify", func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Accept: " + acceptKey(r.Header.Get("Sec-WebSocket-Key")) + "\r\nSec-WebSocket-Protocol: binary\r\n\r\n")
		rw.Flush()
		ws(conn, rw)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return splitHostPort(t, srv.Listener.Addr().String())
}

func splitHostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	return host, port
}

func okPage(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>noVNC</html>")) }

// frameHeader starts a binary WebSocket frame (server to client, so
// unmasked) that declares n bytes of payload.
func frameHeader(n uint64) []byte {
	h := []byte{0x82, 127, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint64(h[2:], n)
	return h
}

func TestProbeAcceptsARealDesktop(t *testing.T) {
	host, port := fakeNoVNC(t, okPage, func(conn net.Conn, rw *bufio.ReadWriter) {
		// websockify sends the VNC server's banner in pieces as it gets them.
		rw.Write(append(frameHeader(4), "RFB "...))
		rw.Write(append(frameHeader(8), "003.008\n"...))
		rw.Flush()
		rw.ReadByte() // until the client hangs up
	})
	if err := Probe(context.Background(), host, port, ""); err != nil {
		t.Fatalf("probe of a working desktop: %v", err)
	}
}

// A fake websockify in the sandbox declares a 3 GB frame and sends data as
// fast as it can: the probe must give up at the frame's header, not read
// (and hold) what it is sent (issue 16: one probe grew to 2.98 GB).
func TestProbeRefusesAHugeWebSocketFrame(t *testing.T) {
	const stopAt = 64 << 20
	var sent atomic.Int64
	writeFailed := make(chan bool, 1)
	host, port := fakeNoVNC(t, okPage, func(conn net.Conn, rw *bufio.ReadWriter) {
		conn.Write(frameHeader(3 << 30))
		chunk := make([]byte, 64<<10)
		for sent.Load() < stopAt {
			conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			n, err := conn.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				writeFailed <- true
				return
			}
		}
		writeFailed <- false
	})
	err := Probe(context.Background(), host, port, "")
	if err == nil {
		t.Fatal("the probe accepted a 3 GB frame")
	}
	if !<-writeFailed {
		t.Errorf("the probe read all %d MiB the fake websockify sent (err %v), instead of hanging up at the frame header", sent.Load()>>20, err)
	}
	t.Logf("probe: %v; the fake sent %d KiB before the probe hung up", err, sent.Load()>>10)
}

// A WebSocket handshake whose headers never end is read no further than a
// real one needs.
func TestProbeRefusesEndlessHandshakeHeaders(t *testing.T) {
	var sent atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/vnc.html", okPage)
	mux.HandleFunc("/websockify", func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := http.NewResponseController(w).Hijack()
		defer conn.Close()
		conn.Write([]byte("HTTP/1.1 101 Switching Protocols\r\n"))
		line := []byte("X-Filler: " + strings.Repeat("a", 1000) + "\r\n")
		for sent.Load() < 64<<20 {
			conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			n, err := conn.Write(line)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host, port := splitHostPort(t, srv.Listener.Addr().String())
	if err := Probe(context.Background(), host, port, ""); err == nil {
		t.Fatal("the probe accepted endless headers")
	}
	srv.Close() // waits for the handler
	if sent.Load() >= 64<<20 {
		t.Errorf("the probe read all %d MiB of handshake headers", sent.Load()>>20)
	}
}

// A redirect from the sandbox's port must not make the sidecar request
// anything else: the probe asks for the page and nothing more (issue 16: a
// 302 made the sidecar request a host-only loopback URL every 500 ms).
func TestProbeDoesNotFollowRedirects(t *testing.T) {
	var hostOnly atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hostOnly.Add(1)
		w.Write([]byte("secret"))
	}))
	defer target.Close()
	host, port := fakeNoVNC(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/admin/delete-everything", http.StatusFound)
	}, func(net.Conn, *bufio.ReadWriter) {})
	err := Probe(context.Background(), host, port, "")
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("probe = %v, want an error naming the redirect", err)
	}
	if n := hostOnly.Load(); n != 0 {
		t.Errorf("the probe followed the redirect: the host-only server got %d requests", n)
	}
}

// A page that never finishes is not waited for past the probe's bound, even
// without a deadline in the context.
func TestProbeHasItsOwnTimeout(t *testing.T) {
	release := make(chan struct{})
	host, port := fakeNoVNC(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, func(net.Conn, *bufio.ReadWriter) {})
	defer close(release)
	defer func(was time.Duration) { probeBound = was }(probeBound)
	probeBound = 100 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- Probe(context.Background(), host, port, "") }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("probe = %v, want a timeout", err)
		}
		t.Logf("probe: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the probe waits for ever on a page that never answers")
	}
}

// acceptKey is the Sec-WebSocket-Accept answer to a client's key (RFC 6455).
func acceptKey(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}
