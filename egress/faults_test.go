package egress_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
)

// TestNothingButJudgedTCPLeaves: UDP other than DNS and IPv6 fail at
// once, and a DNS query for a unique name, even one sent straight to a
// resolver the test runs, reaches no resolver: the sidecar answers it
// with a synthetic address.
func TestNothingButJudgedTCPLeaves(t *testing.T) {
	s := newSandboxNet(t)
	unique := fmt.Sprintf("secret-%d.exfil.test", time.Now().UnixNano())
	out, _ := s.py(fmt.Sprintf(`
import socket, struct
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"x", ("%[1]s", 7000)); print("udp: sent")
except OSError as e:
    print("udp:", e.errno)
try:
    socket.create_connection(("2001:db8::1", 443), timeout=5); print("ipv6: connected")
except OSError as e:
    print("ipv6: failed")
q = struct.pack(">HHHHHH", 0x1234, 0x100, 1, 0, 0, 0) + b"".join(bytes([len(l)]) + l.encode() for l in "%[2]s".split(".")) + b"\x00\x00\x01\x00\x01"
u.settimeout(5)
u.sendto(q, ("%[1]s", 53))
a = u.recv(512)
print("dns answer:", ".".join(str(b) for b in a[-4:]))
print("resolved:", socket.gethostbyname("%[2]s"))
`, s.server, unique))
	for _, want := range []string{"udp: 1", "ipv6: failed", "dns answer: 198.1", "resolved: 198.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// What the test's own resolver heard, asked from the host.
	s.judge.Allow(s.server.String(), s.server)
	heard, _ := s.py(fmt.Sprintf(`import urllib.request; print(urllib.request.urlopen("http://%s:8080/dns", timeout=10).read().decode())`, s.server))
	var names []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(heard)), &names); err != nil {
		t.Fatalf("the resolver's list: %v: %s", err, heard)
	}
	for _, n := range names {
		if strings.Contains(n, "secret-") {
			t.Errorf("the resolver heard %q", n)
		}
	}
}

// TestSSHDeniedSaysWhy: a denied SSH client hears the reason as the
// server's disconnect message (what OpenSSH, and so git, print); an
// allowed one reaches the server.
func TestSSHDeniedSaysWhy(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Allow("git.allowed.test", s.server)
	out, _ := s.py(`
import socket
for host in ("git.allowed.test", "git.denied.test"):
    c = socket.create_connection((host, 22), timeout=10)
    c.sendall(b"SSH-2.0-OpenSSH_9.2p1\r\n")
    data = b""
    while True:
        d = c.recv(4096)
        if not d or (b"OpenSSH_test" in data + d): data += d; break
        data += d
    print(host, repr(data))
`)
	if !strings.Contains(out, "git.allowed.test b'SSH-2.0-OpenSSH_test") {
		t.Errorf("the allowed client did not reach the server:\n%s", out)
	}
	if !strings.Contains(out, "git.denied.test b'SSH-2.0-pilot-sandbox") || !strings.Contains(out, "pilot-sandbox blocked git.denied.test:22") {
		t.Errorf("the denied client did not hear why:\n%s", out)
	}
}

// TestAskedAndAnswered: a connection waits while its judge asks, and
// goes on or fails with the answer.
func TestAskedAndAnswered(t *testing.T) {
	s := newSandboxNet(t)
	yes, no := s.judge.Ask("yes.test"), s.judge.Ask("no.test")
	go func() {
		for r := range s.judge.asked {
			switch r.Names[0] {
			case "yes.test":
				yes <- egress.Decision{Allow: true, Dial: []netip.Addr{s.server}, By: "user"}
			case "no.test":
				no <- egress.Decision{By: "user", Reason: "pilot-sandbox: the user said no to no.test:8080 (not needed)"}
			}
		}
	}()
	out, _ := s.py(`
import urllib.request, urllib.error
for h in ("yes.test", "no.test"):
    try:
        print(h, urllib.request.urlopen("http://%s:8080/asked" % h, timeout=20).read().decode().strip())
    except urllib.error.HTTPError as e:
        print(h, e.code, e.read().decode().strip())
`)
	for _, want := range []string{"yes.test hello asked from yes.test:8080", "no.test 403 pilot-sandbox: the user said no to no.test:8080 (not needed)"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestRebindingToForbiddenAddresses: whatever a judge says, the proxy is
// never told to dial the sandbox's loopback, a link-local address (the
// cloud metadata service) or a synthetic one.
func TestRebindingToForbiddenAddresses(t *testing.T) {
	s := newSandboxNet(t)
	for name, addr := range map[string]string{"meta.test": "169.254.169.254", "loop.test": "127.0.0.1", "syn.test": "198.18.0.5"} {
		s.judge.Allow(name, netip.MustParseAddr(addr))
	}
	out, _ := s.py(`
import urllib.request, urllib.error
for h in ("meta.test", "loop.test", "syn.test"):
    try:
        urllib.request.urlopen("http://%s:8080/" % h, timeout=10); print(h, "reached")
    except urllib.error.HTTPError as e:
        print(h, e.code, e.read().decode().strip())
`)
	for _, h := range []string{"meta.test", "loop.test", "syn.test"} {
		if !strings.Contains(out, h+" 403 pilot-sandbox blocked "+h+":8080: it has no address a sandbox may reach") {
			t.Errorf("%s not refused:\n%s", h, out)
		}
	}
}

// TestTheProxyIsOutOfReach: the sandbox's user cannot see, signal or
// replace the proxy (it runs in another container, as another user), and
// ports it took before the proxy started do not let it out: the proxy
// refuses to start, and nothing leaves.
func TestTheProxyIsOutOfReach(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Allow("allowed.test", s.server)
	out, _ := s.exec(`pgrep -fl proxy.py; pkill -f proxy.py; kill -9 -1 2>/dev/null; echo killed`)
	if strings.Contains(out, "proxy.py") {
		t.Errorf("the sandbox sees the proxy: %s", out)
	}
	if got, _ := s.py(`import urllib.request; print(urllib.request.urlopen("http://allowed.test:8080/still", timeout=10).read().decode())`); !strings.Contains(got, "hello still") {
		t.Errorf("the proxy did not survive the sandbox's attempts: %s", got)
	}

	// Another process would now find the ports taken by the sandbox.
	s.e.Close()
	s.pollExec("the proxy ended", `! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 15080), 1)'`, false)
	squat := `python3 -c '
import socket, time
ls = []
for p in (15001, 15080):
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(("0.0.0.0", p)); l.listen(); ls.append(l)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", 15053))
open("/tmp/squatting", "w").close()
while True:
    for l in ls:
        l.setblocking(False)
        try: c, _ = l.accept(); c.sendall(b"squatter\n"); c.close()
        except BlockingIOError: pass
    time.sleep(0.01)
' >/dev/null 2>&1 &`
	if out, code := s.exec(squat + " echo started"); code != 0 {
		t.Fatalf("squat: %s", out)
	}
	s.pollExec("the sandbox holds the proxy's ports", "test -e /tmp/squatting", false)
	e2 := egress.New(s.docker, egress.Config{Image: s.image, Scope: dockertest.TestScope, Judge: s.judge, Logger: testlog.New(t)})
	defer e2.Close()
	err := e2.Start(context.Background(), s.project, s.id)
	if err == nil || !strings.Contains(err.Error(), "held by uid 1000") {
		t.Errorf("a proxy started beside a squatter: %v", err)
	}
	got, _ := s.py(fmt.Sprintf(`
import socket
c = socket.create_connection(("%s", 8080), timeout=5)
c.sendall(b"GET /escaped HTTP/1.0\r\n\r\n")
print(repr(c.recv(100)))
`, s.server))
	if strings.Contains(got, "hello escaped") {
		t.Errorf("the squatter got out: %s", got)
	}
}

// TestConnectionsOlderThanTheRulesAreCut: a connection opened before the
// rules stood (by whatever ran in the sandbox before the helper did) is
// cut when they load; it does not go on unjudged.
func TestConnectionsOlderThanTheRulesAreCut(t *testing.T) {
	s := newSandboxBare(t)
	start := fmt.Sprintf(`python3 -c '
import socket, os, time
c = socket.create_connection(("%s", 7000), timeout=5)
c.sendall(b"before\n"); c.recv(100)
open("/tmp/connected", "w").close()
while not os.path.exists("/tmp/go"): time.sleep(0.05)
try:
    c.sendall(b"after\n"); c.settimeout(5); r = c.recv(100)
    open("/tmp/result", "w").write("echoed %%r" %% r)
except OSError as e:
    open("/tmp/result", "w").write("failed %%s" %% e)
' >/dev/null 2>&1 &`, s.server)
	if out, code := s.exec(start); code != 0 {
		t.Fatalf("start the early connection: %s", out)
	}
	s.pollExec("the early connection is open", "test -e /tmp/connected", false)
	s.enforce()
	s.exec("touch /tmp/go")
	s.pollExec("the early connection tried again", "test -e /tmp/result", false)
	out, _ := s.exec("cat /tmp/result")
	if !strings.HasPrefix(out, "failed") {
		t.Errorf("a connection older than the rules went on: %s", out)
	}
}

// TestUnansweredAndRestarted: a question nobody answers in time is a
// denial with its reason, the program waiting meanwhile; and after the
// sandbox stops and starts again (a new network namespace), the rules are
// in again with the start's hook, and the judge's answers hold as before.
func TestUnansweredAndRestarted(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Allow("allowed.test", s.server)
	s.judge.askTimeout = 2 * time.Second
	s.judge.Ask("late.test")
	go func() {
		for range s.judge.asked {
		}
	}()
	began := time.Now()
	out, _ := s.py(`
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://late.test:8080/", timeout=30); print("reached")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
`)
	if !strings.Contains(out, "403 pilot-sandbox blocked late.test:8080: no answer") || time.Since(began) < 2*time.Second {
		t.Errorf("an unanswered question (after %s): %s", time.Since(began), out)
	}

	ctx := context.Background()
	if _, err := s.m.Stop(ctx, s.project); err != nil {
		t.Fatal(err)
	}
	s.e.Stop(s.id)
	if _, err := s.m.Start(ctx, s.project); err != nil {
		t.Fatal(err)
	}
	if err := s.e.Start(ctx, s.project, s.id); err != nil {
		t.Fatal(err)
	}
	out, _ = s.py(`
import socket, urllib.request
print(urllib.request.urlopen("http://allowed.test:8080/again", timeout=10).read().decode().strip())
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"x", ("192.0.2.1", 9)); print("udp: sent")
except OSError as e:
    print("udp:", e.errno)
`)
	for _, want := range []string{"hello again from allowed.test:8080", "udp: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("after a restart, missing %q in:\n%s", want, out)
		}
	}
}

// TestARestartIsANewRun: a container restarted behind the enforcer's
// back (docker restart: a new network namespace, without rules) is a new
// run when its Start comes: the rules go in again, whatever this process
// carried before.
func TestARestartIsANewRun(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Allow("allowed.test", s.server)
	s.api.Post("/containers/" + s.id + "/restart?t=1")
	s.pollExec("the sandbox runs again", "true", false)
	if err := s.e.Start(context.Background(), s.project, s.id); err != nil {
		t.Fatal(err)
	}
	out, _ := s.py(`
import socket, urllib.request
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"x", ("192.0.2.1", 9)); print("udp: sent")
except OSError as e:
    print("udp:", e.errno)
print(urllib.request.urlopen("http://allowed.test:8080/renewed", timeout=10).read().decode().strip())
`)
	for _, want := range []string{"udp: 1", "hello renewed from allowed.test:8080"} {
		if !strings.Contains(out, want) {
			t.Errorf("after a restart behind its back, missing %q in:\n%s", want, out)
		}
	}
}
