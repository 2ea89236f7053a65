package ports_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/tcptest"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// hostContainers runs "container" commands on this machine: a container
// whose loopback is the host's. It records the container of each command.
type hostContainers struct {
	mu  sync.Mutex
	ids []string
}

func (h *hostContainers) used(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids = append(h.ids, id)
}

func (h *hostContainers) usedIDs() map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]bool{}
	for _, id := range h.ids {
		out[id] = true
	}
	return out
}

func (h *hostContainers) Exec(ctx context.Context, id string, spec service.ExecSpec) (service.ExecResult, error) {
	h.used(id)
	cmd := exec.CommandContext(ctx, spec.Cmd[0], spec.Cmd[1:]...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return service.ExecResult{}, err
	}
	return service.ExecResult{ExitCode: cmd.ProcessState.ExitCode(), Stdout: out.Bytes(), Stderr: errOut.Bytes()}, nil
}

func (h *hostContainers) ExecAttach(_ context.Context, id string, spec service.ExecSpec) (service.ExecSession, error) {
	h.used(id)
	cmd := exec.Command(spec.Cmd[0], spec.Cmd[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &hostSession{cmd: cmd, stdin: stdin, stdout: stdout}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go cmd.Wait()
	return s, nil
}

type hostSession struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	once   sync.Once
}

func (s *hostSession) Read(p []byte) (int, error)  { return s.stdout.Read(p) }
func (s *hostSession) Write(p []byte) (int, error) { return s.stdin.Write(p) }
func (s *hostSession) Stderr() string              { return "" } // not kept
func (s *hostSession) Close() error {
	s.once.Do(func() { s.stdin.Close(); s.cmd.Process.Kill() })
	return nil
}

// followed is the sandboxes of a carrier that follows the events a test
// sends it, and is asked nothing else.
type followed struct {
	ports.Sandboxes // nil: not called
	events          chan service.Event
	dir             string
}

func (f followed) Subscribe() (<-chan service.Event, func()) {
	return f.events, func() { close(f.events) }
}

func (f followed) StateDir() string { return f.dir }

// bannerServer writes a line to each connection, then closes it; it
// returns its port on the host's loopback.
func bannerServer(t *testing.T, banner string) int {
	return tcptest.Serve(t, "127.0.0.1:0", func(c net.Conn) { c.Write([]byte(banner)) }).Port
}

// readFrom returns what a connection to the host port gets, or the error.
func readFrom(hostPort int) (string, error) {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(hostPort), 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

// The relay carries a port of the project's current container, lets go
// of a former container's when asked for a new one, and of all of them
// when the sandbox stops (its carrier sees it).
func TestDesktopRelayFollowsTheContainer(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to run the relay on this machine")
	}
	ctx := context.Background()
	hc := &hostContainers{}
	r := ports.NewDesktopRelay(hc, zerolog.Nop())
	events := make(chan service.Event)
	c := ports.NewCarrier(followed{events: events, dir: t.TempDir()}, hc, ports.Options{Desktops: r, Log: zerolog.Nop()})
	defer c.Close()
	port := bannerServer(t, "RFB 003.008\n")
	project := t.TempDir()

	first, err := r.HostPorts(ctx, service.RelayTarget{Project: project, ContainerID: "c1"}, []int{port})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readFrom(first[port]); got != "RFB 003.008\n" {
		t.Fatalf("through the relay: %q, %v", got, err)
	}
	if again, err := r.HostPorts(ctx, service.RelayTarget{Project: project, ContainerID: "c1"}, []int{port}); err != nil || again[port] != first[port] {
		t.Errorf("asked again: %v, %v; want the same host port %d", again, err, first[port])
	}
	if used := hc.usedIDs(); !used["c1"] || len(used) != 1 {
		t.Errorf("commands ran in %v, want c1 only", used)
	}

	second, err := r.HostPorts(ctx, service.RelayTarget{Project: project, ContainerID: "c2"}, []int{port})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readFrom(first[port]); err == nil {
		t.Errorf("the former container's port still answers: %q", got)
	}
	if got, err := readFrom(second[port]); got != "RFB 003.008\n" {
		t.Errorf("through the new container's relay: %q, %v", got, err)
	}
	if used := hc.usedIDs(); !used["c2"] {
		t.Errorf("commands ran in %v, want c2 too", used)
	}

	events <- service.Event{Kind: service.EventState, Project: project, State: &service.State{Status: service.StatusStopped}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := readFrom(second[port]); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the port still answers after the sandbox stopped")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
