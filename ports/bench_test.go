package ports_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/tcptest"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
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

// BenchmarkPorts compares a sandbox port exposed on the host (over the
// direct route where the engine is local, and over exec relays alone)
// with the same server on a direct loopback connection on the host:
// 50 MiB downloads (MB/s), a one-byte round trip on an open connection,
// and a new connection with one round trip.
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
	// The same ports carried by exec relays alone (no direct route).
	xe := carry(b, sb.m, true)
	blobExec, err := xe.ExposePort(context.Background(), sb.project, 8802)
	if err != nil {
		b.Fatal(err)
	}
	echoExec, err := xe.ExposePort(context.Background(), sb.project, 8803)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { xe.ClosePort(sb.project, 8802); xe.ClosePort(sb.project, 8803) })
	hostBlob, hostEcho := hostServers(b)
	for _, target := range []struct{ name, blob, echo string }{
		{"exposed", "127.0.0.1:" + strconv.Itoa(blob.HostPort), "127.0.0.1:" + strconv.Itoa(echo.HostPort)},
		{"exposed-exec", "127.0.0.1:" + strconv.Itoa(blobExec.HostPort), "127.0.0.1:" + strconv.Itoa(echoExec.HostPort)},
		{"loopback", hostBlob, hostEcho},
	} {
		b.Run("download/"+target.name, func(b *testing.B) { benchDownload(b, target.blob) })
		b.Run("roundtrip/"+target.name, func(b *testing.B) { benchRoundTrip(b, target.echo) })
		b.Run("connect/"+target.name, func(b *testing.B) { benchConnect(b, target.echo, nil) })
	}
	// A connection that finds its relays waiting, as one does after a
	// pause: only the round trip to start the relay is added.
	b.Run("connect-warm/exposed-exec", func(b *testing.B) {
		benchConnect(b, "127.0.0.1:"+strconv.Itoa(echoExec.HostPort), func() {
			for ports.WarmRelays(xe, sb.project, 8803) < 2 {
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
	serve := func(f func(net.Conn)) string { return tcptest.Serve(b, "127.0.0.1:0", f).String() }
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

// sinkScript connects to localhost:PORT in the sandbox, sends a byte,
// reads to the end and prints the bytes and the seconds it took.
const sinkScript = `python3 -S -c '
import socket, sys, time
t = time.perf_counter()
s = socket.create_connection(("localhost", int(sys.argv[1])))
s.sendall(b"x")
n, b = 0, bytearray(1 << 18)
while True:
    k = s.recv_into(b)
    if not k: break
    n += k
print(n, time.perf_counter() - t)
' `

// BenchmarkForward downloads 50 MiB from a server on the host's loopback
// through a forwarded port (over the direct route where the engine is
// local, and over exec relays alone), timed by the client in the sandbox
// (MB/s);
// in-sandbox is the same client against the same kind of server inside
// the sandbox, the ceiling of the client itself.
func BenchmarkForward(b *testing.B) {
	sb := startSandbox(b)
	sb.background(b, blobServer, 8803)
	hostBlob, _ := hostServers(b)
	_, port, _ := net.SplitHostPort(hostBlob)
	hostPort, _ := strconv.Atoi(port)
	f := sb.x
	if _, err := f.ForwardPort(context.Background(), sb.project, 8810, hostPort); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.CloseForward(sb.project, 8810) })
	// The same server over exec relays alone (no direct route).
	fe := carry(b, sb.m, true)
	if _, err := fe.ForwardPort(context.Background(), sb.project, 8811, hostPort); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fe.CloseForward(sb.project, 8811) })
	benchForwardRoundTrip(b, sb, f, fe)
	for _, target := range []struct {
		name string
		port int
	}{{"forwarded", 8810}, {"forwarded-exec", 8811}, {"in-sandbox", 8802}} {
		b.Run("download/"+target.name, func(b *testing.B) {
			var seconds float64
			for b.Loop() {
				fields := strings.Fields(sb.sh(b, sinkScript+strconv.Itoa(target.port)))
				if len(fields) != 2 || fields[0] != strconv.Itoa(blobBytes) {
					b.Fatalf("read %v", fields)
				}
				s, _ := strconv.ParseFloat(fields[1], 64)
				seconds += s
			}
			b.ReportMetric(float64(b.N)*blobBytes/1e6/seconds, "MB/s")
		})
	}
}

// pingScript makes 1000 one-byte round trips on one connection to
// localhost:PORT and prints the seconds of each, on average.
const pingScript = `python3 -S -c '
import socket, sys, time
s = socket.create_connection(("localhost", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
t = time.perf_counter()
for _ in range(1000):
    s.sendall(b"x")
    s.recv(1)
print((time.perf_counter() - t) / 1000)
' `

// benchForwardRoundTrip times a one-byte round trip from the sandbox to
// an echo server on the host through a forwarded port (f's direct route,
// fe's exec relays), against the same to the in-sandbox echo server
// (8803), in µs.
func benchForwardRoundTrip(b *testing.B, sb *sandbox, f, fe *ports.Carrier) {
	_, hostEcho := hostServers(b)
	_, port, _ := net.SplitHostPort(hostEcho)
	hostPort, _ := strconv.Atoi(port)
	if _, err := f.ForwardPort(context.Background(), sb.project, 8812, hostPort); err != nil {
		b.Fatal(err)
	}
	if _, err := fe.ForwardPort(context.Background(), sb.project, 8813, hostPort); err != nil {
		b.Fatal(err)
	}
	for _, target := range []struct {
		name string
		port int
	}{{"forwarded", 8812}, {"forwarded-exec", 8813}, {"in-sandbox", 8803}} {
		b.Run("roundtrip/"+target.name, func(b *testing.B) {
			var seconds float64
			for b.Loop() {
				s, err := strconv.ParseFloat(strings.TrimSpace(sb.sh(b, pingScript+strconv.Itoa(target.port))), 64)
				if err != nil {
					b.Fatal(err)
				}
				seconds += s
			}
			b.ReportMetric(seconds/float64(b.N)*1e6, "µs/roundtrip")
		})
	}
}

// BenchmarkRelayStart times the start of an exposed connection's relay in
// the sandbox, from the exec's creation to its ready byte: what a
// connection waits for when no relay is warm. python is the floor: the
// same exec running a one-line Python program that writes the byte.
func BenchmarkRelayStart(b *testing.B) {
	sb := startSandbox(b)
	for _, target := range []struct {
		name string
		cmd  []string
	}{
		{"relay", ports.RelayCommand(8800)},
		{"python", []string{"python3", "-S", "-c", `import os; os.write(1, b"+")`}},
	} {
		b.Run(target.name, func(b *testing.B) {
			for b.Loop() {
				s, err := sb.m.ExecAttachArgv(context.Background(), sb.project, service.ExecSpec{Cmd: target.cmd})
				if err != nil {
					b.Fatal(err)
				}
				buf := make([]byte, 1)
				if _, err := io.ReadFull(s, buf); err != nil || buf[0] != '+' {
					b.Fatalf("read %q: %v %s", buf, err, s.Stderr())
				}
				s.Close()
			}
		})
	}
}
