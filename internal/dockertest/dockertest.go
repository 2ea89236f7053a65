// Package dockertest is how tests get a real Docker engine and real
// sandboxes. A test that needs Docker calls Engine (or Manager) first: the
// test is skipped when no engine answers, and fails instead when
// PILOT_REQUIRE_DOCKER=1, as in CI, so a missing engine cannot pass for a
// green run. With -short it is skipped whatever the engine: the fast loop
// runs no sandbox.
package dockertest

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestScope is the pilot.sandbox label value of the sandboxes tests make.
const TestScope = "test"

// RequireEnv is the variable that turns a skip for a missing engine into a
// failure.
const RequireEnv = "PILOT_REQUIRE_DOCKER"

// Engine returns a client for the engine the sidecar would use.
func Engine(t testing.TB) *engine.Client {
	t.Helper()
	if testing.Short() {
		// -short is the fast loop: no sandbox, engine or not.
		t.Skip("-short: this test needs a real sandbox")
	}
	c := engine.New("")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Info(ctx); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("no Docker engine, and %s=1: %v", RequireEnv, err)
		}
		t.Skipf("no Docker engine (set %s=1 to fail instead): %v", RequireEnv, err)
	}
	return c
}

// Config is the manager configuration tests use: the image and base image
// from PILOT_IMAGE and PILOT_BASE_IMAGE like the binary, a private state
// directory, and logs in the test's output.
func Config(t testing.TB) service.Config {
	cfg := service.Config{
		// Tests see only their own sandboxes, never a user's.
		Scope:     TestScope,
		Image:     os.Getenv("PILOT_IMAGE"),
		Resources: resources.SandboxImage(),
		Agent:     resources.DesktopAgent(),
		// Browser tests set sandbox.image "browser" in their project; the
		// rest run the desktop image unless PILOT_DEFAULT_IMAGE says
		// otherwise, so the suite does not build and run Chromium's image
		// for every sandbox.
		BrowserResources:  resources.BrowserImage(),
		DevResources:      resources.DevImage(),
		AgentsResources:   resources.AgentsImage(),
		RecorderResources: resources.RecorderImage(),
		Seccomp:           resources.ChromiumSeccomp(),
		DefaultVariant:    cmp.Or(os.Getenv("PILOT_DEFAULT_IMAGE"), images.VariantDesktop),
		StateDir:          t.TempDir(),
		Logger:            testlog.New(t).Level(zerolog.InfoLevel),
	}
	if base := os.Getenv("PILOT_BASE_IMAGE"); base != "" {
		cfg.BuildArgs = map[string]string{"BASE_IMAGE": base}
	}
	return cfg
}

// Manager returns a manager on the real engine, with cfg's changes applied.
func Manager(t testing.TB, change func(*service.Config)) (*service.Manager, *engine.Client) {
	t.Helper()
	docker := Engine(t)
	cfg := Config(t)
	if change != nil {
		change(&cfg)
	}
	m, err := service.New(docker, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, docker
}

// Run runs the manager's background work (reconciliation, Docker events)
// until the test ends.
func Run(t testing.TB, m *service.Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { m.Run(ctx); close(ran) }()
	t.Cleanup(func() { cancel(); <-ran })
}

// PollExec runs a shell test in the project's sandbox until it succeeds,
// for up to 20 s: the desktop does things in its own time (windows map,
// files get written). It fails the test, saying what, if it never does.
func PollExec(t testing.TB, m *service.Manager, project, what, test string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := m.Exec(context.Background(), project, service.ExecRequest{Command: test, Timeout: 10 * time.Second})
		if err == nil && out.ExitCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 20s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Project makes an empty project directory and removes the project's sandbox
// container when the test ends, whatever happened to it, then the
// directory.
func Project(t testing.TB, docker service.Docker) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pilot-project-")
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeProjectDir(t, dir) })
	t.Cleanup(func() { RemoveSandbox(t, docker, dir) })
	return dir
}

// removeProjectDir removes a test's project directory. Every sidecar of the
// tests follows every test sandbox, so another test's sidecar may still be
// writing this project's .pilot/sandbox.json from a resync that began
// before the sandbox was removed (t.TempDir's cleanup then fails with
// "directory not empty"): it is tried again for a few seconds.
func removeProjectDir(t testing.TB, dir string) {
	var err error
	for range 50 {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("remove the project directory: %v", err)
}

// RemoveSandbox force-removes a project's containers, whoever's they are
// (a test's manager has no owner; the binary's has the user's).
func RemoveSandbox(t testing.TB, docker service.Docker, project string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	removeLabelled(ctx, t, docker, service.LabelProject, project)
}

// removeLabelled force-removes the containers labelled label=value, best
// effort.
func removeLabelled(ctx context.Context, t testing.TB, docker service.Docker, label, value string) {
	list, err := docker.ListContainers(ctx, map[string]string{label: value})
	if err != nil {
		return
	}
	for _, c := range list {
		if err := docker.RemoveContainer(ctx, c.ID); err != nil {
			t.Logf("cleanup: remove %s: %v", c.Name, err)
		}
	}
}

// RemoveScope force-removes a scope's sandboxes, their network helpers
// and then its network, best effort: a test of a scope of its own leaves
// none of them behind.
// Docker has some 30 address pools for bridge networks by default, and
// each scope makes one: a suite that left its scopes' networks would find
// none free after a few runs ("could not find an available,
// non-overlapping IPv4 address pool").
func RemoveScope(t testing.TB, docker *engine.Client, scope string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	removeLabelled(ctx, t, docker, service.LabelSandbox, scope)
	removeLabelled(ctx, t, docker, egress.LabelHelper, scope)
	if out, err := exec.CommandContext(ctx, "docker", "network", "rm", engine.NetworkName(scope)).CombinedOutput(); err != nil &&
		!strings.Contains(string(out), "not found") {
		t.Logf("cleanup: remove the network of scope %s: %v %s", scope, err, out)
	}
}
