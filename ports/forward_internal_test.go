package ports

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// A forward whose direct route stops answering carries the connection,
// and the next ones, over exec relays.
func TestForwardFallsBackToExecRelays(t *testing.T) {
	m, docker := dockertest.Manager(t, func(c *service.Config) { c.Logger = zerolog.Nop() })
	dockertest.Run(t, m)
	project := dockertest.Project(t, docker)
	if _, err := m.Start(context.Background(), project); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "still here") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := NewCarrier(m, docker, Options{Log: zerolog.Nop()})
	t.Cleanup(c.Close)
	f := c.fw
	if _, err := f.ForwardPort(context.Background(), project, 8500, ln.Addr().(*net.TCPAddr).Port); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.CloseForward(project, 8500) })
	l := f.liveListener(project, 8500)
	l.mu.Lock()
	if l.direct == nil {
		l.mu.Unlock()
		t.Skip("no direct route to fall back from with this engine")
	}
	l.direct = &gateway{addr: "127.0.0.1:1", secret: l.direct.secret} // nothing answers there
	l.mu.Unlock()
	fetch := `python3 -c 'import urllib.request; print(urllib.request.urlopen("http://localhost:8500/", timeout=20).read().decode(), end="")'`
	for range 2 {
		out, err := m.Exec(context.Background(), project, service.ExecRequest{Command: fetch, Timeout: time.Minute})
		if err != nil || out.Stdout != "still here" {
			t.Fatalf("through the forward: %+v, %v", out, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.direct != nil {
		t.Error("the failed direct route is still taken")
	}
}

// An exposed port whose direct route stops answering carries each
// connection over an exec relay.
func TestExposeFallsBackToExecRelays(t *testing.T) {
	m, docker := dockertest.Manager(t, func(c *service.Config) { c.Logger = zerolog.Nop() })
	dockertest.Run(t, m)
	project := dockertest.Project(t, docker)
	if _, err := m.Start(context.Background(), project); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Background(context.Background(), project, service.ExecRequest{Command: "mkdir -p /tmp/s && echo inside >/tmp/s/index.html && cd /tmp/s && exec python3 -m http.server 8800 --bind 127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	dockertest.PollExec(t, m, project, "the server listens", "exec 3<>/dev/tcp/127.0.0.1/8800")
	c := NewCarrier(m, docker, Options{Log: zerolog.Nop()})
	t.Cleanup(c.Close)
	e := c.ex
	exposed, err := e.ExposePort(context.Background(), project, 8800)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ClosePort(project, 8800) })
	x := e.find(project, 8800)
	x.mu.Lock()
	if x.gw == nil {
		x.mu.Unlock()
		t.Skip("no direct route to fall back from with this engine")
	}
	x.gw = &gateway{session: x.gw.session, addr: "127.0.0.1:1", secret: x.gw.secret} // nothing answers there
	x.mu.Unlock()
	for range 2 {
		res, err := http.Get(exposed.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || string(body) != "inside\n" {
			t.Fatalf("through the exposed port: %q, %v", body, err)
		}
	}
}
