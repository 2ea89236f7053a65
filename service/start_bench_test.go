package service_test

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkStart measures a start to a ready desktop (the real probe: the
// viewer's files checked, an RFB banner through websockify) beside the
// engine's own start of the same container, each iteration running both
// so that both see the same load:
//
//   - restart: Manager.Start of the stopped sandbox, against `docker start`
//     of the same container (the CLI, as the baseline).
//   - fresh: Manager.Start that creates the container, against
//     `docker run -d` of the same image.
//
// Beside ns/op (the sidecar's start) each reports the baseline's time
// (baseline-ms), their ratio, and where the sidecar's time went, from a
// trace of its engine calls and probes: before the engine's start
// (pre-ms), the engine's start call (engine-ms), from there to the probe
// that answered (ready-ms), after it (post-ms), and the probes made.
// It asserts nothing about time.
func BenchmarkStart(b *testing.B) {
	b.Run("restart", func(b *testing.B) { benchStart(b, false) })
	b.Run("fresh", func(b *testing.B) { benchStart(b, true) })
}

func benchStart(b *testing.B, fresh bool) {
	docker := dockertest.Engine(b)
	tr := &tracer{Docker: docker}
	cfg := dockertest.Config(b)
	cfg.Logger = zerolog.Nop()
	cfg.Probe = func(ctx context.Context, ws int, viewer, password string) error {
		began := time.Now()
		err := desktop.ProbeAuth(ctx, "127.0.0.1", ws, viewer, password)
		end := time.Now()
		name := "probe"
		if err != nil {
			name = "probe(" + firstWords(err.Error()) + ")"
		}
		tr.add(span{name, began, end})
		if err == nil {
			tr.probeOK = end
		}
		return err
	}
	m, err := service.New(tr, cfg) // its engine calls go through the tracer
	if err != nil {
		b.Fatal(err)
	}
	dir := dockertest.Project(b, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir) // builds the image if need be
	if err != nil {
		b.Fatal(err)
	}
	image := st.Image
	var sums phaseSums
	for b.Loop() {
		b.StopTimer()
		if fresh {
			dockertest.RemoveSandbox(b, docker, dir)
		} else if _, err := m.Stop(ctx, dir); err != nil {
			b.Fatal(err)
		}
		tr.reset()
		b.StartTimer()
		began := time.Now()
		if _, err := m.Start(ctx, dir); err != nil {
			b.Fatal(err)
		}
		took := time.Since(began)
		b.StopTimer()
		sums.add(tr.phases(began, took))
		b.Logf("%s in %d ms: %s", b.Name(), took.Milliseconds(), tr.timeline(began))
		sums.baseline += baseline(b, image, st.ContainerName, fresh)
		b.StartTimer()
	}
	sums.report(b)
}

// baseline times the engine's own start of the same container (docker
// start, after a stop) or a fresh one of the same image (docker run -d,
// removed after).
func baseline(b *testing.B, image, name string, fresh bool) time.Duration {
	b.Helper()
	if fresh {
		name += "-baseline"
		defer dockerCLI(b, "rm", "-f", name)
		began := time.Now()
		dockerCLI(b, "run", "-d", "--name", name, "--label", "pilot.sandbox=bench", "--entrypoint", "sleep", image, "infinity")
		return time.Since(began)
	}
	dockerCLI(b, "stop", "-t", "5", name)
	began := time.Now()
	dockerCLI(b, "start", name)
	took := time.Since(began)
	dockerCLI(b, "stop", "-t", "5", name)
	return took
}

func dockerCLI(b *testing.B, args ...string) {
	b.Helper()
	if out, err := osexec.Command("docker", args...).CombinedOutput(); err != nil {
		b.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// tracer records when each engine call and probe of a start began and
// ended.
type tracer struct {
	service.Docker
	mu      sync.Mutex
	spans   []span
	probeOK time.Time
}

type span struct {
	name       string
	began, end time.Time
}

func (t *tracer) reset() {
	t.mu.Lock()
	t.spans, t.probeOK = nil, time.Time{}
	t.mu.Unlock()
}

func (t *tracer) add(s span) {
	t.mu.Lock()
	t.spans = append(t.spans, s)
	t.mu.Unlock()
}

// firstWords shortens a probe's error for the timeline.
func firstWords(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

// mark starts a span; the function returned ends it and says when.
func (t *tracer) mark(name string) func() time.Time {
	began := time.Now()
	return func() time.Time {
		end := time.Now()
		t.mu.Lock()
		t.spans = append(t.spans, span{name, began, end})
		t.mu.Unlock()
		return end
	}
}

func (t *tracer) StartContainer(ctx context.Context, id string) error {
	defer t.mark("start")()
	return t.Docker.StartContainer(ctx, id)
}

func (t *tracer) InspectContainer(ctx context.Context, id string) (service.Container, error) {
	defer t.mark("inspect")()
	return t.Docker.InspectContainer(ctx, id)
}

func (t *tracer) CreateContainer(ctx context.Context, spec service.ContainerSpec) (string, error) {
	defer t.mark("create")()
	return t.Docker.CreateContainer(ctx, spec)
}

func (t *tracer) CopyTo(ctx context.Context, id, dir string, archive io.Reader) error {
	defer t.mark("copy")()
	return t.Docker.CopyTo(ctx, id, dir, archive)
}

func (t *tracer) ListContainers(ctx context.Context, labels map[string]string) ([]service.Container, error) {
	defer t.mark("list")()
	return t.Docker.ListContainers(ctx, labels)
}

func (t *tracer) ImageLabels(ctx context.Context, ref string) (map[string]string, error) {
	defer t.mark("image")()
	return t.Docker.ImageLabels(ctx, ref)
}

func (t *tracer) Exec(ctx context.Context, id string, spec service.ExecSpec) (service.ExecResult, error) {
	defer t.mark("exec")()
	return t.Docker.Exec(ctx, id, spec)
}

// timeline is one start's spans, in ms from its beginning.
func (t *tracer) timeline(began time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, s := range t.spans {
		out = append(out, fmt.Sprintf("%s %d-%d", s.name, s.began.Sub(began).Milliseconds(), s.end.Sub(began).Milliseconds()))
	}
	return strings.Join(out, ", ")
}

// phases splits one start's time: before the engine's start call, the
// call, until the probe that answered, and after it.
func (t *tracer) phases(began time.Time, took time.Duration) phaseSums {
	t.mu.Lock()
	defer t.mu.Unlock()
	sort.Slice(t.spans, func(i, j int) bool { return t.spans[i].began.Before(t.spans[j].began) })
	var p phaseSums
	var engine span
	for _, s := range t.spans {
		switch s.name {
		case "start":
			engine = s
		default:
			if strings.HasPrefix(s.name, "probe") {
				p.probes++
			}
		}
	}
	p.pre = engine.began.Sub(began)
	p.engine = engine.end.Sub(engine.began)
	p.ready = t.probeOK.Sub(engine.end)
	p.post = took - p.pre - p.engine - p.ready
	p.runs = 1
	return p
}

type phaseSums struct {
	pre, engine, ready, post, baseline time.Duration
	probes, runs                       int
}

func (p *phaseSums) add(q phaseSums) {
	p.pre += q.pre
	p.engine += q.engine
	p.ready += q.ready
	p.post += q.post
	p.probes += q.probes
	p.runs += q.runs
}

func (p phaseSums) report(b *testing.B) {
	if p.runs == 0 {
		return
	}
	n := float64(p.runs)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(p.pre), "pre-ms")
	b.ReportMetric(ms(p.engine), "engine-ms")
	b.ReportMetric(ms(p.ready), "ready-ms")
	b.ReportMetric(ms(p.post), "post-ms")
	b.ReportMetric(float64(p.probes)/n, "probes")
	b.ReportMetric(ms(p.baseline), "baseline-ms")
	total := p.pre + p.engine + p.ready + p.post
	b.ReportMetric(float64(total)/float64(p.baseline), "ratio")
}

// BenchmarkIdleMemory reports the memory of an idle sandbox, as docker
// stats counts it (without the page cache it could drop), after it has
// sat for PILOT_BENCH_IDLE (20 s unless set) since its start. Each
// iteration is a fresh sandbox. ns/op means nothing here.
func BenchmarkIdleMemory(b *testing.B) {
	settle := 20 * time.Second
	if v, err := time.ParseDuration(os.Getenv("PILOT_BENCH_IDLE")); err == nil {
		settle = v
	}
	m, docker := dockertest.Manager(b, func(c *service.Config) { c.Logger = zerolog.Nop() })
	api := dockertest.NewAPI(b)
	var total int64
	for b.Loop() {
		dir := dockertest.Project(b, docker)
		st, err := m.Start(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(settle) // a duration of idleness, not a condition to poll
		total += api.Stats(st.ContainerID).MemoryBytes
		dockertest.RemoveSandbox(b, docker, dir)
	}
	b.ReportMetric(float64(total)/float64(b.N)/(1<<20), "MiB")
}
