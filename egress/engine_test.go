package egress_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestUrllibHonouringTheProxy: Python's urllib, which honours HTTP_PROXY
// and HTTPS_PROXY, reaches an allowed host through the explicit proxy
// (absolute URL and CONNECT), and a denied one gets the 403 naming the
// host and how to ask.
func TestUrllibHonouringTheProxy(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Allow("allowed.test", s.server)
	out, code := s.py(`
import ssl, urllib.request, urllib.error
ctx = ssl._create_unverified_context()
print(urllib.request.urlopen("http://allowed.test:8080/plain", timeout=10).read().decode().strip())
print(urllib.request.urlopen("https://allowed.test:8443/tls", timeout=10, context=ctx).read().decode().strip())
for url in ("http://denied.test:8080/x", "https://denied.test:8443/x"):
    try:
        urllib.request.urlopen(url, timeout=10, context=ctx)
        print("reached", url)
    except urllib.error.HTTPError as e:
        print("http error", e.code, e.read().decode().strip())
    except OSError as e:
        print("error", e)
`)
	for _, want := range []string{
		"hello plain from allowed.test:8080",
		"hello tls from allowed.test:8443",
		"http error 403 pilot-sandbox blocked denied.test:8080; ask the user: pilot-sandbox net allow denied.test",
		"Tunnel connection failed: 403 pilot-sandbox blocked denied.test:8443; ask the user: pilot-sandbox net allow denied.test",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in (exit %d):\n%s", want, code, out)
		}
	}
	blocked := s.e.TakeBlocked(s.project)
	if len(blocked) != 2 || blocked[0].Host != "denied.test" {
		t.Errorf("blocked since the last look: %+v", blocked)
	}
}

// TestRawSocketIsJudged: a program that ignores the proxy variables, resolves
// names itself and opens plain sockets is judged all the same, by the name
// it looked up and by what its first bytes say.
func TestRawSocketIsJudged(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Allow("allowed.test", s.server)
	out, code := s.py(fmt.Sprintf(`
import os, socket, ssl
for k in list(os.environ):
    if k.lower().endswith("_proxy"):
        del os.environ[k]
def get(host, addr=None):
    c = socket.create_connection((addr or host, 8080), timeout=10)
    c.sendall(("GET /raw HTTP/1.0\r\nHost: %%s\r\n\r\n" %% host).encode())
    data = b""
    while True:
        d = c.recv(65536)
        if not d: break
        data += d
    return data.decode().splitlines()
print("allowed:", get("allowed.test")[-1])
print("denied:", get("denied.test")[0])
print("by address:", get("allowed.test", "%s")[0])
ctx = ssl._create_unverified_context()
try:
    with socket.create_connection(("denied.test", 8443), timeout=10) as c:
        ctx.wrap_socket(c, server_hostname="denied.test")
    print("tls: reached")
except OSError as e:
    print("tls:", type(e).__name__)
`, s.server))
	for _, want := range []string{
		"allowed: hello raw from allowed.test",
		"denied: HTTP/1.1 403 pilot-sandbox blocked denied.test:8080",
		fmt.Sprintf("by address: HTTP/1.1 403 pilot-sandbox blocked %s:8080", s.server),
		"tls: ConnectionResetError",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in (exit %d):\n%s", want, code, out)
		}
	}
	var sawBytes bool
	for _, e := range s.e.Log(s.project, 0) {
		sawBytes = sawBytes || (e.Allowed && e.Host == "allowed.test" && e.BytesIn > 0 && e.BytesOut > 0)
	}
	if !sawBytes {
		t.Errorf("no allowed entry with byte counts in the log: %+v", s.e.Log(s.project, 0))
	}
}
