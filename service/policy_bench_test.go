package service_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkPolicyRound measures one round of the lifecycle policy over 10
// running sandboxes: the sidecar's CPU time per round (cpu-ms/op), and
// the engine's (dockerd, containerd and the containers' shims,
// engine-cpu-ms/op; other work on the engine counts too).
//
//   - in-use: every sandbox used lately: the idle check looks at clocks.
//   - watched: idle, each with a viewer connected: one exec per sandbox.
//   - disk: a disk limit: one measure of each sandbox's layer.
func BenchmarkPolicyRound(b *testing.B) {
	file := filepath.Join(b.TempDir(), "config.json")
	os.WriteFile(file, []byte(`{"maxRunning": 0}`), 0o600)
	m, docker := dockertest.Manager(b, func(c *service.Config) {
		c.Scope = policyScope
		c.Logger = zerolog.Nop()
		c.Policy = service.PolicyConfig{File: file, MinIdleStop: time.Second, Interval: time.Hour}
	})
	ctx := context.Background()
	states := make([]service.State, 10)
	var wg sync.WaitGroup
	for i := range states {
		dir := dockertest.Project(b, docker)
		wg.Go(func() {
			var err error
			if states[i], err = m.Start(ctx, dir); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	round := func(b *testing.B, config string) {
		os.WriteFile(file, []byte(config[:len(config)-1]+`, "maxRunning": 0}`), 0o600)
		m.PolicyRound(ctx) // reads the file, and sees the runs
		measure(b, func() { m.PolicyRound(ctx) })
		for _, st := range states {
			if now, _ := m.Status(ctx, st.ProjectPath); now.Status != service.StatusRunning {
				b.Fatalf("%s is %s", st.ProjectPath, now.Status)
			}
		}
	}
	b.Run("in-use", func(b *testing.B) { round(b, `{"idleStop": "30m", "disk": "0"}`) })
	b.Run("watched", func(b *testing.B) {
		for _, st := range states {
			viewer, err := rfbtest.DialViewer(st.WatchURL, 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { viewer.Close() })
		}
		time.Sleep(1100 * time.Millisecond) // idle for idleStop, so rounds look for viewers
		round(b, `{"idleStop": "1s", "disk": "0"}`)
	})
	b.Run("disk", func(b *testing.B) { round(b, `{"idleStop": "0", "disk": "10g"}`) })
}

// measure runs f b.N times and reports the CPU it cost this process and
// the engine, per run.
func measure(b *testing.B, f func()) {
	self, engine := cpuSelf(), dockertest.EngineCPU()
	for b.Loop() {
		f()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(cpuSelf()-self)/n/1e6, "cpu-ms/op")
	b.ReportMetric(float64(dockertest.EngineCPU()-engine)/n/1e6, "engine-cpu-ms/op")
}

func cpuSelf() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
