package resources_test

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestNetProxyPython runs the network proxy's Python tests
// (pilotnet/test_*.py) in a sandbox of the desktop image, against the
// proxy the image carries (/usr/local/lib/pilot-net/proxy.py): the
// Python, the ssl module and the kernel (os.splice) the proxy meets there.
func TestNetProxyPython(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	project := dockertest.Project(t, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, project); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("pilotnet/test_proxy.py")
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.ExecArgv(ctx, project, service.ExecSpec{
		Cmd:     []string{"sh", "-c", "mkdir -p /tmp/pilotnet && cat > /tmp/pilotnet/test_proxy.py && cd /tmp/pilotnet && python3 -B -m unittest -v"},
		Env:     []string{"PILOT_NET_DIR=/usr/local/lib/pilot-net"},
		Stdin:   bytes.NewReader(tests),
		Timeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("the proxy's Python tests failed (exit %d, timed out %v):\n%s", res.ExitCode, res.TimedOut, out)
	}
	if regexp.MustCompile(`(?m)^OK \(skipped=\d+\)$`).MatchString(out) {
		t.Fatalf("the proxy's Python tests skipped some in the image:\n%s", out)
	}
	t.Log(lastLines(out, 3))
}
