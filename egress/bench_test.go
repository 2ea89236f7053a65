package egress_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// The path's costs, measured from inside a sandbox against the servers'
// container (testdata/servers.py). "direct" runs the same client as
// pilot-net (uid 1002), whose connections the rules let out untouched:
// the network without the proxy. Each op is one connection (ms/op) or one
// MiB (MB/s), timed by the client itself.
//
//	PILOT_IMAGE=pilot-sandbox-egress:latest go test ./egress -run '^$' -bench Path -benchtime 200x

// connectClient opens N TLS connections to HOST:8443 (a fresh lookup, a
// connect and a handshake each) and prints the mean in milliseconds.
const connectClient = `
import socket, ssl, sys, time
host, n = sys.argv[1], int(sys.argv[2])
ctx = ssl._create_unverified_context()
t0 = time.perf_counter()
for _ in range(n):
    addr = socket.gethostbyname(host)
    with socket.create_connection((addr, 8443), timeout=10) as c:
        with ctx.wrap_socket(c, server_hostname="allowed.test"):
            pass
print((time.perf_counter() - t0) * 1000 / n)
`

// throughputClient fetches N MiB from http://HOST:8080/blob and prints MB/s.
const throughputClient = `
import socket, sys, time
host, n = sys.argv[1], int(sys.argv[2])
c = socket.create_connection((host, 8080), timeout=30)
c.sendall(("GET /blob?mb=%d HTTP/1.0\r\nHost: allowed.test\r\n\r\n" % n).encode())
buf = bytearray(1 << 20); got = 0
t0 = time.perf_counter()
while True:
    k = c.recv_into(buf)
    if not k: break
    got += k
dt = time.perf_counter() - t0
print(got / dt / 1e6)
`

func BenchmarkPath(b *testing.B) {
	s := newSandboxNet(b)
	s.judge.Allow("allowed.test", s.server)
	s.judge.Allow(s.server.String(), s.server)
	for _, c := range []struct{ name, user, host string }{
		{"connect/direct", "1002", s.server.String()},
		{"connect/path-by-address", "", s.server.String()},
		{"connect/path-by-name", "", "allowed.test"},
	} {
		b.Run(c.name, func(b *testing.B) {
			ms := s.pyAs(b, c.user, connectClient, c.host, strconv.Itoa(b.N))
			b.ReportMetric(ms, "ms/op")
		})
	}
	for _, c := range []struct{ name, user, host string }{
		{"throughput/direct", "1002", s.server.String()},
		{"throughput/path", "", "allowed.test"},
	} {
		b.Run(c.name, func(b *testing.B) {
			mbps := s.pyAs(b, c.user, throughputClient, c.host, strconv.Itoa(max(b.N, 64)))
			b.ReportMetric(mbps, "MB/s")
		})
	}
}

// pyAs runs a Python program with arguments in the sandbox as user ("" is
// the sandbox user, with the proxy's environment) and returns the number
// it prints.
func (s *sandboxNet) pyAs(b *testing.B, user, program string, args ...string) float64 {
	b.Helper()
	spec := service.ExecSpec{Cmd: append([]string{"python3", "-c", program}, args...), User: user, Timeout: 10 * time.Minute}
	if user == "" {
		spec.Env = s.e.ExecEnv(egress.Cause{})
	}
	b.ResetTimer()
	res, err := s.m.ExecArgv(context.Background(), s.project, spec)
	b.StopTimer()
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("%v (exit %d): %s%s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(res.Stdout)), 64)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// timingJudge notes when each request reached it.
type timingJudge struct {
	*tableJudge
	mu sync.Mutex // guards at
	at []time.Time
}

func (j *timingJudge) Judge(ctx context.Context, r egress.Request) egress.Decision {
	j.mu.Lock()
	j.at = append(j.at, time.Now())
	j.mu.Unlock()
	return j.tableJudge.Judge(ctx, r)
}

// BenchmarkQuestionLatency: from a program's connect() in the sandbox to
// the judge (and so the Asker behind it) being called, for a client that
// speaks first (TLS) and for one that waits for the server (the proxy
// waits PEEK_WAIT for its first bytes, then asks without them). The
// container and the host share the kernel's clock.
func BenchmarkQuestionLatency(b *testing.B) {
	s := newSandboxNet(b)
	j := &timingJudge{tableJudge: s.judge}
	s.rejudge(j)
	for _, c := range []struct{ name, send string }{{"tls-client", "hello"}, {"silent-client", ""}} {
		b.Run(c.name, func(b *testing.B) {
			program := fmt.Sprintf(`
import socket, ssl, time, sys
ctx = ssl._create_unverified_context()
for i in range(int(sys.argv[1])):
    t = time.time_ns()
    c = socket.create_connection(("203.0.113.%%d" %% (i %% 200 + 1), 443), timeout=10)
    if %q:
        try: ctx.wrap_socket(c, server_hostname="q%%d.test" %% i)
        except OSError: pass
    else:
        try: c.recv(1)
        except OSError: pass
    print(t)
    c.close()
`, c.send)
			j.mu.Lock()
			j.at = nil
			j.mu.Unlock()
			res, err := s.m.ExecArgv(context.Background(), s.project, service.ExecSpec{Cmd: []string{"python3", "-c", program, strconv.Itoa(b.N)}, Timeout: 10 * time.Minute})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v: %s%s", err, res.Stdout, res.Stderr)
			}
			starts := strings.Fields(string(res.Stdout))
			j.mu.Lock()
			defer j.mu.Unlock()
			if len(starts) != len(j.at) {
				b.Fatalf("%d connections, %d judged", len(starts), len(j.at))
			}
			var total time.Duration
			for i, st := range starts {
				ns, _ := strconv.ParseInt(st, 10, 64)
				total += j.at[i].Sub(time.Unix(0, ns))
			}
			b.ReportMetric(float64(total.Microseconds())/float64(len(starts))/1000, "ms/question")
		})
	}
}

// BenchmarkHelperStart: a running sandbox's egress rules in and its proxy
// ready (the hook's work at a start: the helper container's create,
// attach and start, nft, and Python), one op each.
func BenchmarkHelperStart(b *testing.B) {
	s := newSandboxNet(b)
	s.e.Close()
	for b.Loop() {
		e := egress.New(s.docker, egress.Config{Image: s.image, Scope: "test", Judge: s.judge})
		if err := e.Start(context.Background(), s.project, s.id); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		e.Close()
		s.pollExec("the proxy ended", `! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 15080), 1)'`, false)
		b.StartTimer()
	}
}

// BenchmarkDNSAnswer: one A query from the sandbox to the sidecar's
// answer (the proxy's stub, the channel both ways), sequentially.
func BenchmarkDNSAnswer(b *testing.B) {
	s := newSandboxNet(b)
	ms := s.pyAs(b, "", `
import socket, struct, sys, time
n = int(sys.argv[1])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5)
t0 = time.perf_counter()
for i in range(n):
    q = struct.pack(">HHHHHH", i & 0xffff, 0x100, 1, 0, 0, 0) + b"\x01a\x04test\x00\x00\x01\x00\x01"
    u.sendto(q, ("127.0.0.1", 53)); u.recv(512)
print((time.perf_counter() - t0) * 1000 / n)
`, strconv.Itoa(b.N))
	b.ReportMetric(ms, "ms/op")
}
