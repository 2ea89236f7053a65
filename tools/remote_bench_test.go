package tools_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/sshtest"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkRemote measures what a user waits for with the engine here and
// on another machine over ssh (an sshd of the test's own in front of this
// machine's engine, with nothing or 20 ms added to each direction of the
// link, internal/sshtest): an agent tool's round trip (a click), a
// screenshot, a command (sandbox_exec "true"), and the viewer's first
// picture once a start has answered. Over ssh the desktop is carried by
// the process, as serve carries it.
//
//	go test -run '^$' -bench BenchmarkRemote -benchtime 20x ./tools
func BenchmarkRemote(b *testing.B) {
	for _, link := range []struct {
		name  string
		ssh   bool
		delay time.Duration
	}{
		{"local", false, 0},
		{"ssh", true, 0},
		{"ssh_20ms_each_way", true, 20 * time.Millisecond},
	} {
		b.Run(link.name, func(b *testing.B) {
			if link.ssh {
				sshtest.Start(b, sshtest.Options{Delay: link.delay}).Use(b)
			}
			bn := newRemoteBench(b, link.ssh)
			b.Run("click", func(b *testing.B) {
				bn.b = b
				i := 0
				for b.Loop() {
					i++
					bn.tool("sandbox_click", fmt.Sprintf(`{"x": %d, "y": 300}`, 600+i%2))
				}
			})
			b.Run("screenshot", func(b *testing.B) {
				bn.b = b
				for b.Loop() {
					bn.tool("sandbox_screenshot", `{}`)
				}
			})
			b.Run("exec", func(b *testing.B) {
				bn.b = b
				for b.Loop() {
					bn.tool("sandbox_exec", `{"command": "true"}`)
				}
			})
			b.Run("first_picture", func(b *testing.B) { firstPicture(b, bn) })
		})
	}
}

// newRemoteBench is a bench whose manager carries the desktops when the
// engine is remote, as the sidecar's wiring does.
func newRemoteBench(b *testing.B, remote bool) *bench {
	desktops := ports.NewDesktopRelay(dockertest.Engine(b), zerolog.Nop())
	bn := newBenchWith(b, desktop.DefaultDisplay, func(c *service.Config) { c.Remote, c.DesktopPorts = remote, desktops })
	carrier := ports.NewCarrier(bn.m, bn.docker.(ports.Containers), ports.Options{Desktops: desktops, Log: zerolog.Nop()})
	b.Cleanup(carrier.Close)
	return bn
}

// firstPicture restarts the sandbox (untimed) and times a viewer that
// connects at once, through its handshake to its first update.
func firstPicture(b *testing.B, bn *bench) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		if _, err := bn.m.Stop(ctx, bn.project); err != nil {
			b.Fatal(err)
		}
		st, err := bn.m.Start(ctx, bn.project)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c, err := rfbtest.DialViewer(st.ViewerURL, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Sync(time.Minute); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
