package ports_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/tcptest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// The sandbox does not choose the address the sidecar dials (issue 28,
// N1): a program in it that writes its own "IP PORT" line into a relay
// helper's stdout, ahead of the helper's, would have the sidecar connect
// to a host-only listener of its choice and hand it the route's secret
// and then the user's bytes. Here it tries, against an exposed port's
// gateway and a forwarded port's listener, pointing at a listener on the
// host's loopback; that listener must get nothing, and both ports must
// still carry their bytes.
func TestDirectRouteAddressIsNotTheSandboxes(t *testing.T) {
	if !localEngine() {
		t.Skip("no direct route with this engine")
	}
	var baited atomic.Int32
	var mu sync.Mutex
	var got []string // what each connection to the bait sent
	bait := tcptest.Serve(t, "127.0.0.1:0", func(c net.Conn) {
		baited.Add(1)
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.ReadAll(io.LimitReader(c, 256))
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	})
	sb := startSandbox(t)
	ctx := context.Background()
	script, err := os.ReadFile("testdata/inject_address.py")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := sb.m.ExecArgv(ctx, sb.project, service.ExecSpec{Cmd: []string{"sh", "-c", "cat > /tmp/inject_address.py"}, Stdin: bytes.NewReader(script), Timeout: time.Minute}); err != nil || res.ExitCode != 0 {
		t.Fatalf("copy the injector in: %v %+v", err, res)
	}
	line := fmt.Sprintf("127.0.0.1 %d", bait.Port)
	if _, err := sb.m.Background(ctx, sb.project, service.ExecRequest{Command: fmt.Sprintf("exec python3 /tmp/inject_address.py /tmp/inject.log '%s' '+%s'", line, line)}); err != nil {
		t.Fatal(err)
	}
	dockertest.PollExec(t, sb.m, sb.project, "the injector watches", "grep -q ready /tmp/inject.log")

	sb.background(t, "mkdir -p /tmp/site && echo inside >/tmp/site/f && cd /tmp/site && exec python3 -m http.server 8800 --bind 127.0.0.1", 8800)
	exposed, err := sb.x.ExposePort(ctx, sb.project, 8800)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := http.Get(exposed.URL + "f"); err != nil {
		t.Errorf("through the exposed port: %v", err)
	} else {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(body) != "inside\n" {
			t.Errorf("through the exposed port: %q", body)
		}
	}
	web := hostServer(t)
	if _, err := sb.x.ForwardPort(ctx, sb.project, 8500, web); err != nil {
		t.Fatal(err)
	}
	if out, ok := run(t, sb.m, sb.project, fetchScript+"http://localhost:8500/"); !ok || out != "hello from the host" {
		t.Errorf("through the forwarded port: %q", out)
	}

	tries := sb.sh(t, "cat /tmp/inject.log")
	t.Logf("the injector: %s", tries)
	for _, role := range []string{"gateway", "listen"} {
		if !strings.Contains(tries, " "+role+" ") {
			t.Errorf("the injector never found the %s helper: the test proves nothing", role)
		}
	}
	// The helpers run as a user the sandbox's own cannot reach.
	if strings.Contains(tries, "injected") {
		t.Errorf("the sandbox wrote into a helper's stdout")
	}
	if n := baited.Load(); n > 0 {
		time.Sleep(3 * time.Second) // the bait's reads end within their deadline
		mu.Lock()
		defer mu.Unlock()
		t.Errorf("the sidecar made %d connections to the address the sandbox wrote (a host-only listener); they sent %q", n, got)
	}
}
