package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkResume measures a resume to a ready desktop (Manager.Start of
// a paused sandbox: the thaw, the desktop's probe, its state saved; ns/op)
// beside the engine's own thaw of the same container, each iteration
// running all of them so that they see the same load: `docker unpause`
// (the CLI, as the baseline: baseline-ms, and ratio against it)
// and the API's unpause call alone (api-ms, and api-ratio), the floor
// under any resume. The pause before each is not timed. It asserts
// nothing about time.
func BenchmarkResume(b *testing.B) {
	docker := dockertest.Engine(b)
	cfg := dockertest.Config(b)
	cfg.Logger = zerolog.Nop()
	if testing.Verbose() {
		cfg.Logger = testlog.New(b).Level(zerolog.DebugLevel) // where the time goes
	}
	m, err := service.New(docker, cfg)
	if err != nil {
		b.Fatal(err)
	}
	dir := dockertest.Project(b, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	var resume, cli, api time.Duration
	for b.Loop() {
		b.StopTimer()
		if _, err := m.Pause(ctx, dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		if _, err := m.Start(ctx, dir); err != nil {
			b.Fatal(err)
		}
		resume += time.Since(began)
		b.StopTimer()
		dockerCLI(b, "pause", st.ContainerID)
		began = time.Now()
		dockerCLI(b, "unpause", st.ContainerID)
		cli += time.Since(began)
		dockerCLI(b, "pause", st.ContainerID)
		began = time.Now()
		if err := docker.UnpauseContainer(ctx, st.ContainerID); err != nil {
			b.Fatal(err)
		}
		api += time.Since(began)
		b.StartTimer()
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(ms(cli), "baseline-ms")
	b.ReportMetric(float64(resume)/float64(cli), "ratio")
	b.ReportMetric(ms(api), "api-ms")
	b.ReportMetric(float64(resume)/float64(api), "api-ratio")
}
