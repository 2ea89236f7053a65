package ports_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// browserSandboxes is a carrier's sandboxes: one project whose sandbox
// has a browser, started and stopped by the test, which sends the events.
type browserSandboxes struct {
	ports.Sandboxes // nil: not called
	events          chan service.Event
	dir             string

	mu      sync.Mutex
	target  service.RelayTarget
	running bool
	// endsAfterTarget: the run ends right after BrowserTarget answers.
	endsAfterTarget bool
}

func newBrowserSandboxes(t *testing.T) *browserSandboxes {
	return &browserSandboxes{events: make(chan service.Event, 16), dir: t.TempDir()}
}

func (f *browserSandboxes) Subscribe() (<-chan service.Event, func()) {
	return f.events, func() { close(f.events) }
}

func (f *browserSandboxes) StateDir() string { return f.dir }

func (f *browserSandboxes) BrowserTarget(ctx context.Context, project string) (service.RelayTarget, error) {
	t, err := f.RelayTarget(ctx, project)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.endsAfterTarget {
		f.running = false
	}
	return t, err
}

func (f *browserSandboxes) RelayTarget(_ context.Context, project string) (service.RelayTarget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running || project != f.target.Project {
		return service.RelayTarget{}, service.ErrNotRunning
	}
	return f.target, nil
}

func (f *browserSandboxes) ExecArgv(_ context.Context, _ string, spec service.ExecSpec) (service.ExecResult, error) {
	if slices.Equal(spec.Cmd, []string{"pilot-open", "--devtools"}) {
		return service.ExecResult{Stdout: []byte("/devtools/browser/0b1c\n")}, nil
	}
	return service.ExecResult{ExitCode: 127}, nil
}

// start starts a run of the project's sandbox.
func (f *browserSandboxes) start(project string, startedAt int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = service.RelayTarget{Project: project, ContainerID: "c1", StartedAt: startedAt, User: "sandbox"}
	f.running = true
}

// end ends the run with the event st (nil: the sandbox was removed).
func (f *browserSandboxes) end(st *service.State) {
	f.mu.Lock()
	f.running = false
	project := f.target.Project
	f.mu.Unlock()
	f.events <- service.Event{Kind: service.EventState, Project: project, State: st}
}

// idleRelays are relays that say they wait, and wait.
type idleRelays struct{ ports.Containers }

func (idleRelays) ExecAttach(context.Context, string, service.ExecSpec) (service.ExecSession, error) {
	near, far := net.Pipe()
	go far.Write([]byte("+"))
	return idleSession{near, far}, nil
}

type idleSession struct{ near, far net.Conn }

func (s idleSession) Read(p []byte) (int, error)  { return s.near.Read(p) }
func (s idleSession) Write(p []byte) (int, error) { return s.near.Write(p) }
func (s idleSession) Stderr() string              { return "" }
func (s idleSession) Close() error                { s.far.Close(); return s.near.Close() }

// browserRelay returns the host address of the project's DevTools relay,
// checking that it accepts connections.
func browserRelay(t *testing.T, c *ports.Carrier, project string) string {
	t.Helper()
	ws, err := c.Browser(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(ws)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatalf("the relay of a running sandbox refuses: %v", err)
	}
	conn.Close()
	return u.Host
}

func browserCarrier(t *testing.T) (*ports.Carrier, *browserSandboxes, string) {
	sb := newBrowserSandboxes(t)
	c := ports.NewCarrier(sb, idleRelays{}, ports.Options{Log: zerolog.Nop()})
	t.Cleanup(c.Close)
	project := t.TempDir()
	sb.start(project, 1)
	return c, sb, project
}

// A stop, a removal, a container that dies and the carrier's end each
// close the sandbox's DevTools relay: its port refuses, rather than at the
// next sandbox/browser.
func TestDevToolsRelayClosesWhenTheSandboxIsNoLongerRunning(t *testing.T) {
	ends := []struct {
		name string
		end  func(c *ports.Carrier, sb *browserSandboxes)
	}{
		{"stop", func(_ *ports.Carrier, sb *browserSandboxes) {
			sb.end(&service.State{Status: service.StatusStopped})
		}},
		{"remove", func(_ *ports.Carrier, sb *browserSandboxes) { sb.end(nil) }},
		{"death", func(_ *ports.Carrier, sb *browserSandboxes) {
			sb.end(&service.State{Status: service.StatusError, Error: "exited with 137"})
		}},
		{"the carrier's end", func(c *ports.Carrier, _ *browserSandboxes) { c.Close() }},
	}
	for _, tc := range ends {
		t.Run(tc.name, func(t *testing.T) {
			c, sb, project := browserCarrier(t)
			addr := browserRelay(t, c, project)
			tc.end(c, sb)
			pollHost(t, "the relay refuses after "+tc.name, func() bool {
				conn, err := net.Dial("tcp", addr)
				if err == nil {
					conn.Close()
				}
				return err != nil
			})
		})
	}
}

// A run that ends between its target and its relay gets no relay: one
// would listen until the next sandbox/browser.
func TestDevToolsRelayOfAnEndedRunIsNotMade(t *testing.T) {
	c, sb, project := browserCarrier(t)
	sb.endsAfterTarget = true
	if _, err := c.Browser(context.Background(), project); !errors.Is(err, service.ErrNotRunning) {
		t.Errorf("sandbox/browser of a run that ended: %v, want ErrNotRunning", err)
	}
	if n := ports.DevToolsRelays(c); n != 0 {
		t.Errorf("%d relays kept for a run that ended", n)
	}
}

// sandbox/browser twice in one run hands out the same address; a new run
// gets a new one.
func TestDevToolsRelayIsKeptForTheSameRun(t *testing.T) {
	c, sb, project := browserCarrier(t)
	first := browserRelay(t, c, project)
	if again := browserRelay(t, c, project); again != first {
		t.Errorf("a second sandbox/browser in the same run moved the relay from %s to %s", first, again)
	}
	sb.start(project, 2)
	if second := browserRelay(t, c, project); second == first {
		t.Errorf("a new run kept the relay %s (and its secret)", first)
	}
	if n := ports.DevToolsRelays(c); n != 1 {
		t.Errorf("%d relays for one project", n)
	}
}
