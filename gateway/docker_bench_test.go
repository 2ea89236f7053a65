package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkInSandbox measures the gateway on its real path: a client in a
// sandbox, on its loopback, through the relays, to a streaming server on
// the host. "direct" is the same server forwarded into the sandbox as a
// user's forward (the same relays, no gateway); "gateway" is through
// the gateway carried in as tasks get it. It reports the median and 90th
// percentile time to a streamed response's first byte (new connection
// each) and the throughput of one 64 MiB stream.
func BenchmarkInSandbox(b *testing.B) {
	const size = 64 << 20
	m, docker := dockertest.Manager(b, func(c *service.Config) { c.Logger = zerolog.Nop() })
	dockertest.Run(b, m)
	project := dockertest.Project(b, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, project); err != nil {
		b.Fatal(err)
	}
	carrier := ports.NewCarrier(m, docker, ports.Options{Log: zerolog.Nop()})
	b.Cleanup(carrier.Close)
	up := newUpstream(b, streamer)
	f := newFixture(b, up, userKey)
	gwPort, err := carrier.CarryInto(ctx, project, hostPort(b, f.base), []int{15100, 15101})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := carrier.ForwardPort(ctx, project, 15200, hostPort(b, up.URL)); err != nil {
		b.Fatal(err)
	}
	client, err := os.ReadFile("testdata/bench_client.py")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, url string }{
		{"direct", "http://127.0.0.1:15200/v1/messages"},
		{"gateway", fmt.Sprintf("http://127.0.0.1:%d/anthropic/v1/messages", gwPort)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := m.ExecArgv(ctx, project, service.ExecSpec{
					Cmd:     []string{"python3", "-c", string(client), c.url + "?size=" + strconv.Itoa(size), f.lease.Token(), "50", strconv.Itoa(size)},
					Timeout: 5 * time.Minute,
				})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%v %s %s", err, res.Stdout, res.Stderr)
				}
				var median, p90, mbps float64
				if _, err := fmt.Sscanf(string(res.Stdout), "first %f %f\nmbps %f", &median, &p90, &mbps); err != nil {
					b.Fatalf("%q: %v", res.Stdout, err)
				}
				b.ReportMetric(median, "ms-first-byte")
				b.ReportMetric(p90, "ms-first-byte-p90")
				b.ReportMetric(mbps, "MB/s")
			}
		})
	}
}

// streamer sends a first event at once, then, if the query asks a size,
// that many bytes of events.
func streamer(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
	w.(http.Flusher).Flush()
	size, _ := strconv.Atoi(r.URL.Query().Get("size"))
	chunk := strings.Repeat("data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\""+strings.Repeat("x", 200)+"\"}}\n\n", 64)
	for n := 0; n < size; n += len(chunk) {
		io.WriteString(w, chunk)
	}
}

func hostPort(b testing.TB, base string) int {
	u, _ := url.Parse(base)
	_, port, _ := net.SplitHostPort(u.Host)
	n, err := strconv.Atoi(port)
	if err != nil {
		b.Fatal(err)
	}
	return n
}
