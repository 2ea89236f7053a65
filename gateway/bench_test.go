package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkFirstByte: a streamed response's first event, through the
// gateway and straight from the server (a new connection each, as a CLI
// keeps one per conversation but pays this on its first).
func BenchmarkFirstByte(b *testing.B) {
	up := newUpstream(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
		w.(http.Flusher).Flush()
	})
	f := newFixture(b, up, userKey)
	for _, c := range []struct{ name, url string }{{"direct", up.URL + "/v1/messages"}, {"gateway", f.base + "/anthropic/v1/messages"}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest("POST", c.url, strings.NewReader(`{"stream":true}`))
				req.Header.Set("X-Api-Key", f.lease.Token())
				req.Close = true
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkThroughput: a 64 MiB stream of events, through the gateway and
// straight from the server.
func BenchmarkThroughput(b *testing.B) {
	line := "data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"" + strings.Repeat("x", 200) + "\"}}\n\n"
	const size = 64 << 20
	up := newUpstream(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := strings.Repeat(line, 64)
		for n := 0; n < size; n += len(chunk) {
			io.WriteString(w, chunk)
		}
	})
	f := newFixture(b, up, userKey)
	for _, c := range []struct{ name, url string }{{"direct", up.URL + "/v1/messages"}, {"gateway", f.base + "/anthropic/v1/messages"}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				req, _ := http.NewRequest("POST", c.url, strings.NewReader(`{}`))
				req.Header.Set("X-Api-Key", f.lease.Token())
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
