package engine_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

func TestNoEngineIsUnavailableNotAnError(t *testing.T) {
	c := engine.New("unix:///nonexistent/docker.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	started := time.Now()
	_, err := c.Info(ctx)
	var ue *service.UnavailableError
	if !errors.Is(err, service.ErrDockerUnavailable) || !errors.As(err, &ue) {
		t.Fatalf("err = %v, want an UnavailableError", err)
	}
	if !strings.Contains(err.Error(), "start Docker") || ue.Endpoint != "unix:///nonexistent/docker.sock" {
		t.Errorf("message %q does not say what to do", err)
	}
	if _, err := c.InspectContainer(ctx, "x"); !errors.Is(err, service.ErrDockerUnavailable) {
		t.Errorf("inspect: %v", err)
	}
	if time.Since(started) > 5*time.Second {
		t.Logf("took %s to give up", time.Since(started)) // informational: never assert time
	}
}

// runningSandbox starts a real sandbox and returns its container ID.
func runningSandbox(t *testing.T) (*engine.Client, string) {
	t.Helper()
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return docker, st.ContainerID
}

func TestExec(t *testing.T) {
	docker, id := runningSandbox(t)
	ctx := context.Background()
	run := func(spec service.ExecSpec) service.ExecResult {
		t.Helper()
		res, err := docker.Exec(ctx, id, spec)
		if err != nil {
			t.Fatalf("%q: %v", spec.Cmd, err)
		}
		return res
	}
	t.Run("exit code and streams", func(t *testing.T) {
		res := run(service.ExecSpec{Cmd: []string{"bash", "-c", "echo out; echo err >&2; exit 7"}})
		if res.ExitCode != 7 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.TimedOut || res.Truncated {
			t.Errorf("%+v", res)
		}
	})
	t.Run("argv is not a shell", func(t *testing.T) {
		res := run(service.ExecSpec{Cmd: []string{"printf", "%s|", "$(id)", "a b", "; rm -rf /"}})
		if string(res.Stdout) != "$(id)|a b|; rm -rf /|" {
			t.Errorf("%q", res.Stdout)
		}
	})
	t.Run("user, env and workdir", func(t *testing.T) {
		res := run(service.ExecSpec{Cmd: []string{"sh", "-c", "echo $(id -un) $X $(pwd)"}, User: "sandbox", Env: []string{"X=1"}, WorkDir: "/tmp"})
		if string(res.Stdout) != "sandbox 1 /tmp\n" {
			t.Errorf("%q", res.Stdout)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		in := "línea 1\nline 2 中文\n"
		res := run(service.ExecSpec{Cmd: []string{"cat"}, Stdin: strings.NewReader(in)})
		if string(res.Stdout) != in {
			t.Errorf("%q", res.Stdout)
		}
	})
	t.Run("output cap", func(t *testing.T) {
		res := run(service.ExecSpec{Cmd: []string{"head", "-c", "300000", "/dev/zero"}, MaxOutput: 100000})
		if len(res.Stdout) != 100000 || !res.Truncated || res.ExitCode != 0 {
			t.Errorf("%d bytes, truncated %v, exit %d", len(res.Stdout), res.Truncated, res.ExitCode)
		}
	})
	t.Run("a child holding stdout cannot hold the call", func(t *testing.T) {
		res := run(service.ExecSpec{Cmd: []string{"bash", "-c", "sleep 60 & echo started"}, Timeout: 2 * time.Second})
		if !res.TimedOut || !bytes.Contains(res.Stdout, []byte("started")) {
			t.Errorf("%+v", res)
		}
	})
	t.Run("a command that ignores signals is bounded", func(t *testing.T) {
		res := run(service.ExecSpec{Cmd: []string{"bash", "-c", "trap '' TERM INT HUP; sleep 60"}, Timeout: time.Second})
		if !res.TimedOut || res.ExitCode != -1 {
			t.Errorf("%+v", res)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := docker.Exec(ctx, id, service.ExecSpec{Cmd: []string{"sleep", "60"}}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("missing container", func(t *testing.T) {
		if _, err := docker.Exec(ctx, "pilot-no-such-container", service.ExecSpec{Cmd: []string{"true"}}); !errors.Is(err, service.ErrContainerNotFound) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestCopyToKeepsOwnerAndMode(t *testing.T) {
	docker, id := runningSandbox(t)
	res, err := docker.Exec(context.Background(), id, service.ExecSpec{
		Cmd: []string{"stat", "-c", "%U:%G %a", "/etc/pilot-sandbox/vnc/passwd"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Owned by root, readable by the desktop's group only: the sandbox
	// user (every exec) can neither read nor replace it.
	if got := strings.TrimSpace(string(res.Stdout)); got != "root:desktop 440" {
		t.Errorf("password file is %q, want root:desktop with mode 440", got)
	}
}

func TestCapacityAndLimits(t *testing.T) {
	docker, id := runningSandbox(t)
	ctx := context.Background()
	capacity, err := docker.Capacity(ctx)
	if err != nil || capacity.CPUs < 1 || capacity.MemoryBytes < 1<<28 {
		t.Fatalf("capacity %+v, %v", capacity, err)
	}
	c, err := docker.InspectContainer(ctx, id)
	if err != nil || c.Limits != service.DefaultLimits {
		t.Fatalf("limits %+v, want the defaults %+v (%v)", c.Limits, service.DefaultLimits, err)
	}
	if err := docker.StopContainer(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	want := service.Limits{MemoryBytes: 3 << 30, NanoCPUs: 1e9, PidsLimit: 512, ShmBytes: service.DefaultLimits.ShmBytes}
	if err := docker.UpdateLimits(ctx, id, want); err != nil {
		t.Fatal(err)
	}
	if c, err := docker.InspectContainer(ctx, id); err != nil || c.Limits != want {
		t.Errorf("after the update: %+v, want %+v (%v)", c.Limits, want, err)
	}
	if err := docker.UpdateLimits(ctx, "pilot-no-such-container", want); !errors.Is(err, service.ErrContainerNotFound) {
		t.Errorf("update of a missing container: %v", err)
	}
}
