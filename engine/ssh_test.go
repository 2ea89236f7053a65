package engine_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/sshtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// withImage is this machine's engine, reached directly (before a test
// points DOCKER_HOST elsewhere), and the sandbox image, built if missing.
func withImage(tb testing.TB) (direct *engine.Client, image string) {
	tb.Helper()
	direct = dockertest.Engine(tb)
	m, _ := dockertest.Manager(tb, nil)
	if err := m.EnsureImage(context.Background(), ""); err != nil {
		tb.Fatal(err)
	}
	return direct, m.Image()
}

// TestSSHEngine reaches the engine over ssh (an sshd of the test's own in
// front of this machine's engine), both ways the client has: the engine's
// socket forwarded by the master, and, where the server refuses to
// forward sockets, docker system dial-stdio per connection. Each way
// carries the calls, the event stream, an exec and an attached session.
func TestSSHEngine(t *testing.T) {
	direct, image := withImage(t)
	for _, tc := range []struct {
		name  string
		opts  sshtest.Options
		route string
	}{
		{"forwarded socket", sshtest.Options{}, "forwarded to"},
		{"dial-stdio", sshtest.Options{NoSocketForwarding: true}, "dial-stdio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sshtest.Start(t, tc.opts).Use(t)
			remote := engine.New("")
			if !remote.Remote() || !strings.HasPrefix(remote.Endpoint(), "ssh://") {
				t.Fatalf("the client is not remote: %s", remote.Endpoint())
			}
			exerciseEngine(t, remote, direct, image)
			if route := remote.Route(); !strings.Contains(route, tc.route) || !strings.Contains(route, "DOCKER_HOST") {
				t.Errorf("route: %s", route)
			}
			id := idleContainer(t, remote, direct, image)
			exerciseExec(t, remote, id)
		})
	}
}

// idleContainer starts a container of image that sleeps, through remote;
// direct removes it at the end.
func idleContainer(t *testing.T, remote, direct *engine.Client, image string) string {
	t.Helper()
	ctx := context.Background()
	id, err := remote.CreateContainer(ctx, service.ContainerSpec{
		Name: "pilot-sandbox-ssh-test-" + randomHex(t), Image: image,
		Labels:     map[string]string{service.LabelSandbox: dockertest.TestScope},
		Entrypoint: []string{"sleep", "infinity"}, Limits: service.DefaultLimits,
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { direct.RemoveContainer(context.Background(), id) })
	if err := remote.StartContainer(ctx, id); err != nil {
		t.Fatalf("start: %v", err)
	}
	return id
}

// exerciseExec runs a command and holds a conversation with an attached
// one, through remote.
func exerciseExec(t *testing.T, remote *engine.Client, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := remote.Exec(ctx, id, service.ExecSpec{Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	if err != nil || res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Errorf("exec: %+v %v", res, err)
	}
	s, err := remote.ExecAttach(ctx, id, service.ExecSpec{Cmd: []string{"cat"}})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	defer s.Close()
	r := bufio.NewReader(s)
	for _, line := range []string{"one\n", "two\n"} {
		if _, err := io.WriteString(s, line); err != nil {
			t.Fatal(err)
		}
		if got, err := r.ReadString('\n'); got != line || err != nil {
			t.Errorf("attached cat answered %q, %v; want %q", got, err, line)
		}
	}
}

// TestSSHDropMidCall drops the link under a call, on each route: the
// call fails saying the ssh connection dropped and that the next call
// connects again; the next call does, and the container, its files and a
// new exec are there.
func TestSSHDropMidCall(t *testing.T) {
	direct, image := withImage(t)
	for _, tc := range []struct {
		name string
		opts sshtest.Options
	}{
		{"forwarded socket", sshtest.Options{}},
		{"dial-stdio", sshtest.Options{NoSocketForwarding: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := sshtest.Start(t, tc.opts)
			server.Use(t)
			remote := engine.New("")
			id := idleContainer(t, remote, direct, image)
			dropUnderExec(t, server, remote, direct, id)
		})
	}
}

func dropUnderExec(t *testing.T, server *sshtest.Server, remote, direct *engine.Client, id string) {
	ctx := context.Background()
	if _, err := remote.Exec(ctx, id, service.ExecSpec{Cmd: []string{"sh", "-c", "echo kept > /tmp/mark"}}); err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	go func() {
		_, err := remote.Exec(ctx, id, service.ExecSpec{Cmd: []string{"sleep", "30"}, Timeout: time.Minute})
		failed <- err
	}()
	waitForExec(t, direct, id, "sleep 30")
	server.Link().Drop()
	var err error
	select {
	case err = <-failed:
	case <-time.After(time.Minute):
		t.Fatal("the call under way did not end when the link dropped")
	}
	var ue *service.UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "dropped") || !strings.Contains(err.Error(), "the next call connects again") {
		t.Fatalf("the call under the drop: %v", err)
	}
	t.Logf("the call under the drop said: %v", err)
	res, err := remote.Exec(ctx, id, service.ExecSpec{Cmd: []string{"cat", "/tmp/mark"}})
	if err != nil || string(res.Stdout) != "kept\n" {
		t.Fatalf("the next call: %+v %v", res, err)
	}
}

// waitForExec waits until a process with that command line runs in the
// container, seen through direct.
func waitForExec(t *testing.T, direct *engine.Client, id, command string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		res, err := direct.Exec(context.Background(), id, service.ExecSpec{Cmd: []string{"pgrep", "-f", "^" + command}})
		if err == nil && res.ExitCode == 0 {
			return
		}
	}
	t.Fatalf("%q never ran", command)
}

// TestSSHRefusalsSayWhatToDo: ssh never prompts; a host key it does not
// know and a key the server does not take each fail with what to do.
func TestSSHRefusalsSayWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		name, file, content, want string
	}{
		{"unknown host key", "known_hosts", "", "connect once with plain ssh"},
		{"key not authorized", "authorized_keys", "", "add your key to the ssh agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := sshtest.Start(t, sshtest.Options{})
			server.Use(t)
			if err := os.WriteFile(filepath.Join(server.Dir(), tc.file), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := engine.New("").Info(ctx)
			if !errors.Is(err, service.ErrDockerUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
