package egress_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
)

// TestOneCarrierAndTakeover: a second process finds the sandbox carried
// and waits; when the first lets go, it takes the proxy over, and the
// sandbox reaches out again.
func TestOneCarrierAndTakeover(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Allow("allowed.test", s.server)
	e2 := egress.New(s.docker, egress.Config{Image: s.image, Scope: dockertest.TestScope, Judge: s.judge, Logger: testlog.New(t)})
	defer e2.Close()
	if err := e2.Start(context.Background(), s.project, s.id); err != nil {
		t.Fatal(err)
	}
	if carrying, why := e2.Carrier(s.id); carrying || !strings.Contains(why, "another pilot-sandbox process") {
		t.Errorf("the second process says carrying=%v (%s)", carrying, why)
	}
	s.e.Close()
	deadline := time.Now().Add(30 * time.Second)
	for carrying, _ := e2.Carrier(s.id); !carrying; carrying, _ = e2.Carrier(s.id) {
		if time.Now().After(deadline) {
			_, why := e2.Carrier(s.id)
			t.Fatalf("the second process never took over: %s", why)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got, _ := s.py(`import urllib.request; print(urllib.request.urlopen("http://allowed.test:8080/after", timeout=10).read().decode())`); !strings.Contains(got, "hello after") {
		t.Errorf("no way out after the takeover: %s", got)
	}
}

// TestSidecarGoneWithConnectionsHeld: connections held while their judge
// asks fail with a reason when the carrying process lets go; then nothing
// leaves until another carries the sandbox.
func TestSidecarGoneWithConnectionsHeld(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Ask("held.test")
	done := make(chan string, 1)
	go func() {
		out, _ := s.py(`
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://held.test:8080/", timeout=30); print("reached")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except OSError as e:
    print("error", e)
`)
		done <- out
	}()
	select {
	case <-s.judge.asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the connection was never asked about")
	}
	s.e.Close()
	out := <-done
	if !strings.Contains(out, "403 pilot-sandbox blocked held.test:8080: no pilot-sandbox process carries this sandbox's network now") {
		t.Errorf("the held connection did not hear why: %s", out)
	}
	if got, _ := s.py(fmt.Sprintf(`
import socket
try:
    c = socket.create_connection(("%s", 8080), timeout=5)
    c.sendall(b"GET /leak HTTP/1.0\r\n\r\n")
    print(repr(c.recv(100)))
except OSError as e:
    print("failed", e)`, s.server)); strings.Contains(got, "hello leak") {
		t.Errorf("a connection left with no carrier: %s", got)
	}
}

// TestConnectionFlood: 10,000 connection attempts in about a second from
// inside cost the sidecar a bounded amount of memory, and the sandbox
// reaches an allowed host afterwards.
func TestConnectionFlood(t *testing.T) {
	s := newSandboxNet(t)
	s.judge.Allow("allowed.test", s.server)
	before := heapInUse()
	out, _ := s.py(`
import socket, time
t0 = time.monotonic(); socks = []; fails = 0
for i in range(10000):
    s = socket.socket(); s.setblocking(False)
    try:
        s.connect_ex(("203.0.113.%d" % (i % 250 + 1), 443))
    except OSError:
        fails += 1
    socks.append(s)
    if len(socks) > 500:
        for x in socks: x.close()
        socks = []
print("attempts in %.2fs, failures %d" % (time.monotonic() - t0, fails))
`)
	t.Log(strings.TrimSpace(out))
	runtime.GC()
	grown := int64(heapInUse()) - int64(before)
	t.Logf("the sidecar's heap grew by %d KiB", grown>>10)
	if grown > 64<<20 {
		t.Errorf("the sidecar's heap grew by %d MiB under the flood", grown>>20)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, _ := s.py(`import urllib.request; print(urllib.request.urlopen("http://allowed.test:8080/after", timeout=10).read().decode())`)
		if strings.Contains(got, "hello after") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no way out after the flood: %s", got)
		}
		time.Sleep(time.Second)
	}
	if n := len(s.e.Log(s.project, 0)); n > 1000 {
		t.Errorf("the log holds %d entries", n)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
