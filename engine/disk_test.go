package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

func TestDiskUsageIsTheWritableLayer(t *testing.T) {
	docker, id := runningSandbox(t)
	ctx := context.Background()
	before, err := docker.DiskUsage(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := docker.Exec(ctx, id, service.ExecSpec{Cmd: []string{"dd", "if=/dev/urandom", "of=/home/sandbox/blob", "bs=1M", "count=20"}, User: "sandbox"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("write 20 MiB: %v %s", err, res.Stderr)
	}
	after, err := docker.DiskUsage(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if grew := after - before; grew < 20<<20 || grew > 30<<20 {
		t.Errorf("the layer grew by %d bytes after writing 20 MiB (%d -> %d)", grew, before, after)
	}
}

func TestSizeBoundFallsBackWhereTheDriverHasNone(t *testing.T) {
	docker := dockertest.Engine(t)
	api := dockertest.NewAPI(t)
	ctx := context.Background()
	supported, why := docker.DiskLimitSupport(ctx)
	t.Logf("this engine: size bound %v (%s)", supported, why)
	// Tried whatever the driver: an engine that cannot bound the layer
	// refuses the create, and the client makes the container without.
	engine.TrySizeBound(docker)
	project := dockertest.Project(t, docker)
	image := dockertest.Config(t).Image
	if image == "" {
		image = images.DefaultTag
	}
	id, err := docker.CreateContainer(ctx, service.ContainerSpec{
		Name: service.ContainerName(project), Image: image, DiskBytes: 1 << 30,
		Labels: map[string]string{service.LabelSandbox: dockertest.TestScope, service.LabelProject: project},
	})
	if err != nil {
		t.Fatalf("create with a size bound: %v", err)
	}
	raw := inspectRaw(t, api, id)
	opt, _ := raw.HostConfig["StorageOpt"].(map[string]any)
	bounded := opt["size"] != nil
	after, afterWhy := docker.DiskLimitSupport(ctx)
	t.Logf("created with StorageOpt %v; now %v (%s)", opt, after, afterWhy)
	switch {
	case bounded && opt["size"] != "1073741824":
		t.Errorf("size bound = %v, want 1073741824", opt["size"])
	case !bounded && (after || !strings.Contains(afterWhy, "refused")):
		t.Errorf("made without a bound, but the client still says %v (%s)", after, afterWhy)
	}
}

func TestDriverBoundsSize(t *testing.T) {
	for _, tc := range []struct {
		driver, backing string
		want            bool
	}{
		{"overlay2", "xfs", true},
		{"overlay2", "extfs", false},
		{"overlay2", "", false},
		{"btrfs", "btrfs", true},
		{"zfs", "zfs", true},
		{"vfs", "extfs", false},
		{"overlayfs", "", false}, // the containerd snapshotter
	} {
		if got, why := engine.DriverBoundsSize(tc.driver, tc.backing); got != tc.want || why == "" {
			t.Errorf("%s on %s: %v (%q), want %v", tc.driver, tc.backing, got, why, tc.want)
		}
	}
}

// BenchmarkDiskUsage measures one measure of a sandbox's layer: fresh,
// and holding 20,000 small files and 200 MiB, with the CPU it costs the
// engine (engine-cpu-ms/op; other work on the engine counts too).
func BenchmarkDiskUsage(b *testing.B) {
	m, docker := dockertest.Manager(b, nil)
	dir := dockertest.Project(b, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	measure := func(b *testing.B) {
		before := dockertest.EngineCPU()
		for b.Loop() {
			if _, err := docker.DiskUsage(ctx, st.ContainerID); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(dockertest.EngineCPU()-before)/float64(b.N)/1e6, "engine-cpu-ms/op")
	}
	b.Run("fresh", measure)
	fill := "mkdir -p ~/many && cd ~/many && seq 1 20000 | xargs touch && head -c 200m /dev/zero > ~/blob"
	if res, err := docker.Exec(ctx, st.ContainerID, service.ExecSpec{Cmd: []string{"sh", "-c", fill}, User: "sandbox"}); err != nil || res.ExitCode != 0 {
		b.Fatalf("fill: %v %s", err, res.Stderr)
	}
	b.Run("20000-files", measure)
}
