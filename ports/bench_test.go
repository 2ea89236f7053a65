package ports_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/ports"
)

// blobBytes is what the throughput benchmarks send per connection.
const blobBytes = 50 << 20

// blobServer sends 50 MiB on each connection once it has read a byte,
// then closes it; then it echoes bytes on port+1 (for the round trips).
const blobServer = `python3 -c '
import socket, threading
def blob(c):
    c.recv(1)
    b = bytes(1 << 20)
    for _ in range(50):
        c.sendall(b)
    c.close()
def echo(c):
    while True:
        d = c.recv(65536)
        if not d: break
        c.sendall(d)
    c.close()
def serve(port, f):
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port)); l.listen()
    while True:
        c, _ = l.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=f, args=(c,), daemon=True).start()
threading.Thread(target=serve, args=(8802, blob), daemon=True).start()
serve(8803, echo)
'`

// BenchmarkPorts compares a sandbox port exposed on the host with the same
// server on a direct loopback connection on the host: 50 MiB downloads
// (MB/s), a one-byte round trip on an open connection, and a new
// connection with one round trip.
func BenchmarkPorts(b *testing.B) {
	sb := startSandbox(b)
	sb.background(b, blobServer, 8803)
	blob, err := sb.x.ExposePort(context.Background(), sb.project, 8802)
	if err != nil {
		b.Fatal(err)
	}
	echo, err := sb.x.ExposePort(context.Background(), sb.project, 8803)
	if err != nil {
		b.Fatal(err)
	}
	hostBlob, hostEcho := hostServers(b)
	for _, target := range []struct{ name, blob, echo string }{
		{"exposed", "127.0.0.1:" + strconv.Itoa(blob.HostPort), "127.0.0.1:" + strconv.Itoa(echo.HostPort)},
		{"loopback", hostBlob, hostEcho},
	} {
		b.Run("download/"+target.name, func(b *testing.B) { benchDownload(b, target.blob) })
		b.Run("roundtrip/"+target.name, func(b *testing.B) { benchRoundTrip(b, target.echo) })
		b.Run("connect/"+target.name, func(b *testing.B) { benchConnect(b, target.echo, nil) })
	}
	// A connection that finds its relays waiting, as one does after a
	// pause: only the round trip to start the relay is added.
	b.Run("connect-warm/exposed", func(b *testing.B) {
		benchConnect(b, "127.0.0.1:"+strconv.Itoa(echo.HostPort), func() {
			for ports.WarmRelays(sb.x, sb.project, 8803) < 2 {
				time.Sleep(time.Millisecond)
			}
		})
	})
}

func benchDownload(b *testing.B, addr string) {
	b.SetBytes(blobBytes)
	for b.Loop() {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conn.Write([]byte{1})
		n, err := io.Copy(io.Discard, conn)
		conn.Close()
		if err != nil || n != blobBytes {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
}

func benchRoundTrip(b *testing.B, addr string) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	buf := []byte{1}
	for b.Loop() {
		if _, err := conn.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// benchConnect times a new connection with one round trip; ready, if
// set, is waited for (untimed) before each.
func benchConnect(b *testing.B, addr string, ready func()) {
	buf := []byte{1}
	for b.Loop() {
		if ready != nil {
			b.StopTimer()
			ready()
			b.StartTimer()
		}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conn.Write(buf)
		if _, err := io.ReadFull(conn, buf); err != nil {
			b.Fatal(err)
		}
		conn.Close()
	}
}

// hostServers runs the blob and echo servers on the host's loopback.
func hostServers(b *testing.B) (blob, echo string) {
	serve := func(f func(net.Conn)) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); f(c) }()
			}
		}()
		return ln.Addr().String()
	}
	chunk := make([]byte, 1<<20)
	blob = serve(func(c net.Conn) {
		c.Read(make([]byte, 1))
		for range blobBytes / len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	echo = serve(func(c net.Conn) { io.Copy(c, c) })
	return blob, echo
}
