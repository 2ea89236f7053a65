package egress_test

import (
	"cmp"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// serviceNetwork is the Enforcer as service's Network, as the command
// joins them (cmd/pilot-sandbox/egress.go).
type serviceNetwork struct{ *egress.Enforcer }

func (n serviceNetwork) ExecEnv(c service.ExecCause) []string {
	return n.Enforcer.ExecEnv(egress.Cause{Tool: c.Tool, RequestID: c.RequestID, Exec: c.Exec, Task: c.Task})
}

func (n serviceNetwork) Blocked(project string) string {
	return egress.BlockedLine(n.TakeBlocked(project))
}

// TestTheStartPathEnforces: with the hook in the manager, a sandbox is
// reported running only with its rules in (the first exec, at once, is
// judged), every exec has the proxy's environment and its cause, what was
// blocked comes back once, and a stop ends the process's proxy.
func TestTheStartPathEnforces(t *testing.T) {
	judge := newTableJudge()
	e := egress.New(dockertest.Engine(t), egress.Config{Image: cmp.Or(os.Getenv("PILOT_IMAGE"), images.DefaultTag),
		Scope: dockertest.TestScope, Judge: judge, Logger: testlog.New(t)})
	t.Cleanup(e.Close)
	m, docker := dockertest.Manager(t, func(c *service.Config) { c.Network = serviceNetwork{e} })
	project := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	if carrying, why := e.Carrier(st.ContainerID); !carrying {
		t.Fatalf("running, and its network not carried: %s", why)
	}
	out, err := m.Exec(ctx, project, service.ExecRequest{
		Command: `env | grep -E '^(HTTPS?_PROXY|NO_PROXY|PILOT_CAUSE)=' | sort; python3 -c '
import socket
try:
    socket.create_connection(("203.0.113.7", 80), timeout=5).sendall(b"GET / HTTP/1.0\r\n\r\n"); print("sent")
except OSError as e:
    print("failed", e)'`,
		Cause: service.ExecCause{Tool: "sandbox_exec", RequestID: "42"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HTTPS_PROXY=http://127.0.0.1:15080", "HTTP_PROXY=http://127.0.0.1:15080", "NO_PROXY=localhost,127.0.0.1,::1", "PILOT_CAUSE="} {
		if !strings.Contains(out.Stdout, want) {
			t.Errorf("missing %s in the exec's environment:\n%s", want, out.Stdout)
		}
	}
	id := strings.TrimSpace(out.Stdout[strings.Index(out.Stdout, "PILOT_CAUSE=")+len("PILOT_CAUSE="):])
	id, _, _ = strings.Cut(id, "\n")
	if c, ok := e.CauseOf(id); !ok || c.Tool != "sandbox_exec" || c.RequestID != "42" {
		t.Errorf("the exec's cause %q: %+v %v", id, c, ok)
	}
	// The proxy takes the connection in and judges it as the command goes
	// on: a command that ends first (this one sends and exits) has its
	// denial named by the next look (docs/network.md: "since the last").
	line := ""
	for deadline := time.Now().Add(30 * time.Second); line == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		line = m.NetworkBlocked(project)
	}
	if !strings.Contains(line, "203.0.113.7:80") {
		t.Errorf("what was blocked: %q (exec said %s)", line, out.Stdout)
	}
	if again := m.NetworkBlocked(project); again != "" {
		t.Errorf("blocked again after a look: %q", again)
	}
	if _, err := m.Stop(ctx, project); err != nil {
		t.Fatal(err)
	}
	if carrying, _ := e.Carrier(st.ContainerID); carrying {
		t.Errorf("the proxy of a stopped sandbox is still carried")
	}
}

// BenchmarkStartWithPolicy: a start of a stopped sandbox to a ready
// desktop, with the network's hook (the helper beside the readiness
// probe) and without; one op is one start (the stop between is not
// timed).
func BenchmarkStartWithPolicy(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run(name, func(b *testing.B) {
			m, docker := dockertest.Manager(b, func(c *service.Config) {
				if on {
					e := egress.New(dockertest.Engine(b), egress.Config{Image: cmp.Or(os.Getenv("PILOT_IMAGE"), images.DefaultTag),
						Scope: dockertest.TestScope, Judge: newTableJudge()})
					b.Cleanup(e.Close)
					c.Network = serviceNetwork{e}
				}
			})
			project := dockertest.Project(b, docker)
			ctx := context.Background()
			if _, err := m.Start(ctx, project); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				b.StopTimer()
				if _, err := m.Stop(ctx, project); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := m.Start(ctx, project); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
