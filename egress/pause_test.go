package egress_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestPauseKeepsTheNetworkPolicy: a sandbox paused and resumed (docker
// pause freezes its processes, not the helper that shares its network
// namespace) keeps its rules and its proxy: after a freeze of a few
// seconds, a program that ignores the proxy is still judged, and one that
// honours it still reaches what is allowed and is refused the rest.
func TestPauseKeepsTheNetworkPolicy(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Allow("allowed.test", s.server)
	ctx := context.Background()
	if st, err := s.m.Pause(ctx, s.project); err != nil || st.Status != service.StatusPaused {
		t.Fatalf("pause: %+v, %v", st, err)
	}
	time.Sleep(3 * time.Second) // frozen for a while: the helper must not take it for gone
	if st, err := s.m.Start(ctx, s.project); err != nil || st.Status != service.StatusRunning {
		t.Fatalf("resume: %+v, %v", st, err)
	}
	out, code := s.py(fmt.Sprintf(`
import os, socket, urllib.request, urllib.error
def raw(host, addr=None):
    c = socket.create_connection((addr or host, 8080), timeout=10)
    c.sendall(("GET /raw HTTP/1.0\r\nHost: %%s\r\n\r\n" %% host).encode())
    data = b""
    while True:
        d = c.recv(65536)
        if not d: break
        data += d
    return data.decode().splitlines()
print("proxied:", urllib.request.urlopen("http://allowed.test:8080/plain", timeout=10).read().decode().strip())
try:
    urllib.request.urlopen("http://denied.test:8080/x", timeout=10)
    print("proxied denied: reached")
except urllib.error.HTTPError as e:
    print("proxied denied:", e.code)
for k in list(os.environ):
    if k.lower().endswith("_proxy"):
        del os.environ[k]
print("raw:", raw("allowed.test")[-1])
print("raw by address:", raw("allowed.test", "%s")[0])
`, s.server))
	for _, want := range []string{
		"proxied: hello plain from allowed.test:8080",
		"proxied denied: 403",
		"raw: hello raw from allowed.test",
		fmt.Sprintf("raw by address: HTTP/1.1 403 pilot-sandbox blocked %s:8080", s.server),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in (exit %d):\n%s", want, code, out)
		}
	}
}
