package main

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkExecBeside times `pilot-sandbox exec -- true` on a running
// sandbox, each beside `docker exec C true` of the same container in the
// same iteration (issue 26: at most 1.3 times). Both are whole processes
// as a user runs them; scripts/bench.sh reports them.
func BenchmarkExecBeside(b *testing.B) {
	docker := dockertest.Engine(b)
	project := dockertest.Project(b, docker)
	env := append(os.Environ(), "XDG_STATE_HOME="+b.TempDir())
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Env, cmd.Dir = env, project
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v: %s", name, args, err, out)
		}
	}
	run(binary, "start")
	list, err := docker.ListContainers(b.Context(), map[string]string{service.LabelProject: project})
	if err != nil || len(list) != 1 {
		b.Fatalf("the sandbox's container: %v, %v", list, err)
	}
	id := list[0].ID
	var cli, base time.Duration
	for b.Loop() {
		began := time.Now()
		run(binary, "exec", "--", "true")
		cli += time.Since(began)
		b.StopTimer()
		began = time.Now()
		run("docker", "exec", id, "true")
		base += time.Since(began)
		b.StartTimer()
	}
	b.ReportMetric(float64(base)/float64(b.N)/1e6, "baseline-ms")
	b.ReportMetric(float64(cli)/float64(base), "ratio")
}
