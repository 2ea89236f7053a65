package recording_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/recording"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkRecording measures what a recording costs at 5 fps on the
// desktop (1280x800): the recorder's CPU in % of one core (its cgroup's
// usage), the sandbox's CPU meanwhile (Xvfb serves every frame over
// its socket: MIT-SHM does not cross the containers' IPC namespaces), and
// the file's growth in MB a minute, over 30 s after a 3 s
// warm-up, on a still desktop and while xdotool types into an xterm.
// Run with -benchtime=1x: one measurement is 33 s.
//
//	go test ./recording -run '^$' -bench Recording -benchtime=1x
func BenchmarkRecording(b *testing.B) {
	for _, c := range []struct {
		name, activity string
	}{
		{"still", ""},
		{"typing", `xterm -geometry 120x40+0+0 & sleep 1; while :; do xdotool type --delay 120 "the quick brown fox jumps over the lazy dog "; done`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				cpu, sandboxCPU, mb := measure(b, c.activity, 30*time.Second)
				b.ReportMetric(cpu, "%core")
				b.ReportMetric(sandboxCPU, "%core-sandbox")
				b.ReportMetric(mb, "MB/min")
			}
		})
	}
}

func measure(b *testing.B, activity string, span time.Duration) (cpuPercent, sandboxPercent, mbPerMinute float64) {
	m, docker := dockertest.Manager(b, nil)
	dockertest.Run(b, m)
	project := dockertest.Project(b, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, project); err != nil {
		b.Fatal(err)
	}
	if activity != "" {
		if _, err := m.Background(ctx, project, service.ExecRequest{Command: activity}); err != nil {
			b.Fatal(err)
		}
	}
	rec := recording.New(m, docker, recording.Config{Dir: b.TempDir(), Scope: dockertest.TestScope})
	b.Cleanup(rec.Close)
	id, err := rec.Start(ctx, project, 5)
	if err != nil {
		b.Fatal(err)
	}
	st, _ := m.Status(ctx, project)
	list, err := docker.ListContainers(ctx, map[string]string{recording.LabelRecorderOf: st.ContainerID})
	if err != nil || len(list) != 1 {
		b.Fatalf("the recorder's container: %v, %v", list, err)
	}
	api := dockertest.NewAPI(b)
	path := pathOf(b, rec, project, id)
	time.Sleep(3 * time.Second) // the warm-up: the encoder's start and first key frame
	cpu0, box0, size0, t0 := cpuNanos(api, list[0].ID), cpuNanos(api, st.ContainerID), sizeOf(path), time.Now()
	time.Sleep(span) // the span measured
	cpu1, box1, size1, t1 := cpuNanos(api, list[0].ID), cpuNanos(api, st.ContainerID), sizeOf(path), time.Now()
	if _, err := rec.Stop(ctx, id); err != nil {
		b.Fatal(err)
	}
	dt := t1.Sub(t0)
	return float64(cpu1-cpu0) / float64(dt.Nanoseconds()) * 100,
		float64(box1-box0) / float64(dt.Nanoseconds()) * 100,
		float64(size1-size0) / 1e6 / dt.Minutes()
}

func cpuNanos(api *dockertest.API, id string) int64 {
	var raw struct {
		CPUStats struct {
			CPUUsage struct {
				TotalUsage int64 `json:"total_usage"`
			} `json:"cpu_usage"`
		} `json:"cpu_stats"`
	}
	api.GetJSON("/containers/"+id+"/stats?stream=false&one-shot=true", &raw)
	return raw.CPUStats.CPUUsage.TotalUsage
}

func pathOf(b *testing.B, rec *recording.Recorder, project, id string) string {
	list, err := rec.List(project)
	if err != nil {
		b.Fatal(err)
	}
	for _, info := range list {
		if info.ID == id {
			return info.Path
		}
	}
	b.Fatalf("recording %s not listed", id)
	return ""
}

func sizeOf(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
