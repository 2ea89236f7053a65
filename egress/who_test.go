package egress_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
)

// TestAQuestionNamesItsCause: a question about a connection names the
// process that opened it and what the sidecar started it for, found
// through the process's parent when the process cleared its environment;
// a refused connection's log entry names them too; an allowed one does
// not wait to learn them.
func TestAQuestionNamesItsCause(t *testing.T) {
	s := newSandboxBare(t)
	var mu sync.Mutex
	var entries []egress.Entry
	s.e = egress.New(s.docker, egress.Config{Image: s.image, Scope: dockertest.TestScope, Judge: s.judge,
		Logger: testlog.New(t),
		// What is tested is what is found, not how fast (load makes the
		// 30 ms of the default miss here).
		WhoWait: 5 * time.Second,
		OnEntry: func(e egress.Entry) {
			mu.Lock()
			entries = append(entries, e)
			mu.Unlock()
		}})
	t.Cleanup(s.e.Close)
	if err := s.e.Start(context.Background(), s.project, s.id); err != nil {
		t.Fatal(err)
	}
	s.judge.Allow("allowed.test", s.server)
	answer := s.judge.Ask("asked.test")
	go func() {
		r := <-s.judge.asked
		answer <- egress.Decision{By: "user", Reason: "pilot-sandbox: the user said no"}
		s.judge.asked <- r // for the test below
	}()
	// The connecting program runs with an empty environment under a shell
	// that has the exec's; each connection goes from a program of its own.
	out, _ := s.exec(`for h in asked.test denied.test allowed.test; do
  env -i /usr/bin/python3 -c "import socket, sys
try:
    c = socket.create_connection(('$h', 8080), timeout=20); c.sendall(b'GET / HTTP/1.0\r\nHost: $h\r\n\r\n'); c.recv(100); print('$h', 'reached')
except OSError as e:
    print('$h', 'refused', e)" connect-to-$h
done`)
	if !strings.Contains(out, "allowed.test reached") {
		t.Fatalf("the allowed connection did not go through:\n%s", out)
	}
	r := <-s.judge.asked
	if r.Process == nil || !strings.Contains(r.Process.Command, "connect-to-asked.test") {
		t.Errorf("the question's process = %+v, want the python3 that connected", r.Process)
	}
	if r.Cause == nil || !strings.Contains(r.Cause.Exec, "for h in asked.test") {
		t.Errorf("the question's cause = %+v, want the exec", r.Cause)
	}
	mu.Lock()
	defer mu.Unlock()
	byHost := map[string]egress.Entry{}
	for _, e := range entries {
		byHost[e.Host] = e
	}
	denied := byHost["denied.test"]
	if denied.Allowed || denied.Process == nil || !strings.Contains(denied.Process.Command, "connect-to-denied.test") ||
		denied.Cause == nil || !strings.Contains(denied.Cause.Exec, "for h in") {
		t.Errorf("the refused connection's entry = %+v (process %+v, cause %+v)", denied, denied.Process, denied.Cause)
	}
	if allowed := byHost["allowed.test"]; !allowed.Allowed || allowed.Process != nil {
		t.Errorf("the allowed connection's entry = %+v: it should not have waited for its process", allowed)
	}
}

// BenchmarkWho measures one look for who holds a connection: the sidecar
// to the finder in the sandbox and back, with the connection's process
// among the sandbox's.
//
//	go test -run '^$' -bench BenchmarkWho -benchtime 100x ./egress
func BenchmarkWho(b *testing.B) {
	s := newSandboxBare(b)
	out, _ := s.exec(fmt.Sprintf(`nohup python3 -c "
import socket, time
c = socket.create_connection(('%s', 8080)); print(c.getsockname()[1], flush=True); time.sleep(600)" > /tmp/held-port 2>&1 &
for i in $(seq 50); do [ -s /tmp/held-port ] && break; sleep 0.1; done; cat /tmp/held-port`, s.server))
	port, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		b.Fatalf("the held connection: %s", out)
	}
	look, stop := egress.StartWho(b, s.docker, s.id)
	defer stop()
	for b.Loop() {
		if pid, _ := look(port); pid == 0 {
			b.Fatal("the connection's process was not found")
		}
	}
}
