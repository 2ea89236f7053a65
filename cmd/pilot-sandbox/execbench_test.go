package main

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkExecBeside times `pilot-sandbox exec -- true` on a running
// sandbox, each beside `docker exec C true` of the same container in the
// same iteration (issue 26: at most 1.3 times). Both are whole processes
// as a user runs them; scripts/bench.sh reports them. app_serving has a
// `serve` of the project beside, carrying its network's proxy, as the app
// does while it is open (the usual case); alone has none, and each exec's
// process loads the rules and carries the proxy itself.
func BenchmarkExecBeside(b *testing.B) {
	dockerExec := func(id string) []string { return []string{"exec", id, "true"} }
	b.Run("app_serving", func(b *testing.B) { benchmarkCLI(b, true, []string{"exec", "--", "true"}, dockerExec) })
	b.Run("alone", func(b *testing.B) { benchmarkCLI(b, false, []string{"exec", "--", "true"}, dockerExec) })
}

// BenchmarkStatusBeside times `pilot-sandbox status` of a running
// sandbox beside `docker inspect C` (issue 26 measured 2.0 s under load),
// the app serving the project and alone.
func BenchmarkStatusBeside(b *testing.B) {
	inspect := func(id string) []string { return []string{"inspect", id} }
	b.Run("app_serving", func(b *testing.B) { benchmarkCLI(b, true, []string{"status"}, inspect) })
	b.Run("alone", func(b *testing.B) { benchmarkCLI(b, false, []string{"status"}, inspect) })
}

// benchmarkCLI times the CLI with args on a running sandbox, each beside
// docker with baseline(the container's ID) in the same iteration;
// serving has the app's sidecar beside, carrying the sandbox's network.
func benchmarkCLI(b *testing.B, serving bool, args []string, baseline func(id string) []string) {
	docker := dockertest.Engine(b)
	project := dockertest.Project(b, docker)
	state := b.TempDir()
	env := append(os.Environ(), "XDG_STATE_HOME="+state)
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
	if serving {
		app := startSidecar(b, "lsp", "XDG_STATE_HOME="+state)
		app.call("sandbox/status", map[string]any{"projectPath": project}, time.Minute)
		waitCarried(b, docker, id)
	}
	var cli, base time.Duration
	for b.Loop() {
		began := time.Now()
		run(binary, args...)
		cli += time.Since(began)
		b.StopTimer()
		began = time.Now()
		run("docker", baseline(id)...)
		base += time.Since(began)
		b.StartTimer()
	}
	b.ReportMetric(float64(base)/float64(b.N)/1e6, "baseline-ms")
	b.ReportMetric(float64(cli)/float64(base), "ratio")
}

// waitCarried waits for a network helper of the sandbox to run: a process
// carries its proxy.
func waitCarried(b *testing.B, docker *engine.Client, id string) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ids, err := docker.RunningIDs(b.Context(), map[string]string{egress.LabelHelperOf: id})
		if err == nil && len(ids) > 0 {
			return
		}
	}
	b.Fatal("no process carries the sandbox's network a minute after the app's status")
}
