package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/sshtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkSSHConnection measures what one new connection to the engine
// costs on each way there is (each iteration: connect, GET /_ping, read
// the answer): the local socket; over ssh through the master's forwarded
// socket; over ssh with docker system dial-stdio run per connection on
// the master (a server that refuses to forward sockets); and, for scale,
// a new ssh login per connection, which the client never does. Then an
// exec ("true": create, start, inspect) on each, with the link as it is
// and with 20 ms added each way.
//
//	go test -run '^$' -bench BenchmarkSSHConnection -benchtime 20x ./engine
func BenchmarkSSHConnection(b *testing.B) {
	direct, image := withImage(b)
	b.Run("local", func(b *testing.B) { benchRoute(b, direct, direct, image) })
	for _, tc := range []struct {
		name string
		opts sshtest.Options
	}{
		{"forwarded", sshtest.Options{}},
		{"dial_stdio", sshtest.Options{NoSocketForwarding: true}},
		{"forwarded_20ms_each_way", sshtest.Options{Delay: 20 * time.Millisecond}},
		{"dial_stdio_20ms_each_way", sshtest.Options{NoSocketForwarding: true, Delay: 20 * time.Millisecond}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			server := sshtest.Start(b, tc.opts)
			server.Use(b)
			benchRoute(b, engine.New(""), direct, image)
			if tc.opts.NoSocketForwarding {
				b.Run("login_each", func(b *testing.B) { benchLogin(b, server) })
			}
		})
	}
}

// benchRoute times a new connection, and an exec in a sleeping container.
func benchRoute(b *testing.B, c, direct *engine.Client, image string) {
	ctx := context.Background()
	if _, err := c.Info(ctx); err != nil { // sets the route up
		b.Fatal(err)
	}
	b.Run("connection", func(b *testing.B) {
		for b.Loop() {
			conn, err := engine.DialEngine(c, ctx)
			if err != nil {
				b.Fatal(err)
			}
			ping(b, conn)
		}
	})
	id := benchContainer(b, c, direct, image)
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if res, err := c.Exec(ctx, id, service.ExecSpec{Cmd: []string{"true"}}); err != nil || res.ExitCode != 0 {
				b.Fatalf("exec: %+v %v", res, err)
			}
		}
	})
}

// benchLogin times an ssh that logs in for one connection.
func benchLogin(b *testing.B, server *sshtest.Server) {
	for b.Loop() {
		cmd := exec.Command("ssh", "-o", "BatchMode=yes", "-o", "ControlMaster=no", "-o", "ControlPath=none",
			"-p", fmt.Sprint(server.Link().Port()), "-l", server.User(), "--", "127.0.0.1", "docker", "system", "dial-stdio")
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		ping(b, struct {
			io.Reader
			io.WriteCloser
		}{out, in})
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// ping sends GET /_ping on conn, reads the answer's status line and closes it.
func ping(b *testing.B, conn io.ReadWriteCloser) {
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n"); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		b.Fatalf("ping: %q %v", line, err)
	}
}

// benchContainer is idleContainer for a benchmark.
func benchContainer(b *testing.B, c, direct *engine.Client, image string) string {
	ctx := context.Background()
	id, err := c.CreateContainer(ctx, service.ContainerSpec{
		Name: "pilot-sandbox-ssh-bench-" + fmt.Sprint(time.Now().UnixNano()), Image: image,
		Labels:     map[string]string{service.LabelSandbox: dockertest.TestScope},
		Entrypoint: []string{"sleep", "infinity"}, Limits: service.DefaultLimits,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.RemoveContainer(context.Background(), id) })
	if err := c.StartContainer(ctx, id); err != nil {
		b.Fatal(err)
	}
	return id
}
