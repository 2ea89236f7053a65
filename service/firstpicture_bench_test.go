package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkFirstPicture measures what the panel waits for once a start has
// answered: a viewer that connects at once (a WebSocket through
// websockify, the VNC handshake with the password) and asks for its first
// update. Each iteration restarts the sandbox (untimed) and times the
// viewer: ns/op, with handshake-ms the part until the handshake was done.
func BenchmarkFirstPicture(b *testing.B) {
	m, docker := dockertest.Manager(b, func(c *service.Config) { c.Logger = zerolog.Nop() })
	dir := dockertest.Project(b, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, dir); err != nil {
		b.Fatal(err)
	}
	var handshakes time.Duration
	for b.Loop() {
		b.StopTimer()
		if _, err := m.Stop(ctx, dir); err != nil {
			b.Fatal(err)
		}
		st, err := m.Start(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		c, err := rfbtest.DialViewer(st.ViewerURL, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		shaken := time.Since(began)
		handshakes += shaken
		if err := c.Sync(30 * time.Second); err != nil {
			b.Fatal(err)
		}
		b.Logf("handshake %d ms, picture %d ms", shaken.Milliseconds(), time.Since(began).Milliseconds())
		c.Close()

	}
	b.ReportMetric(float64(handshakes.Milliseconds())/float64(b.N), "handshake-ms")
}
