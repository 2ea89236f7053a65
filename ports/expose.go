// Package ports carries TCP connections between the host's loopback and a
// sandbox's, all owned by one Carrier per process: a port of the sandbox
// exposed on a host port (sandbox/ports/expose), a host port forwarded
// into it (sandbox/ports/forward), the desktop of a sandbox without a
// network (service.DesktopPorts), and its browser's DevTools
// (sandbox/browser, behind cdprelay); and what listens inside. The
// sidecar carries the bytes itself, over relays it runs in the container
// (package relay), so the sandbox needs no published port and the host no
// route into it; where the host reaches the container's own address, a
// direct route carries them instead (direct.go).
package ports

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/relay"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Exposed is a sandbox port answering on the host.
type Exposed struct {
	Port     int    `json:"port"`
	HostPort int    `json:"hostPort"`
	URL      string `json:"url"`
}

// checkTimeout bounds the check that the sandbox can carry a port.
const checkTimeout = 30 * time.Second

// warmRelays is how many exec relays an exposure keeps started and
// waiting: a new connection takes one and waits for a round trip instead
// of an exec's start (120 to 190 ms under load, measured).
const warmRelays = 2

// exposer keeps the exposed ports of every project this process serves.
type exposer struct {
	sb       Sandboxes // nil for the desktop relay's, which is given its targets
	docker   Containers
	log      zerolog.Logger
	execOnly bool // never the direct route (direct.go): for tests

	mu      sync.Mutex // guards exposed
	exposed map[string][]*exposure
}

// exposure is one exposed port: its listener and the connections it
// carries.
type exposure struct {
	Exposed
	project string
	ln      net.Listener

	pool *relay.Pool // exec relays started ahead of their connections
	gw   *gateway    // the direct route, if the host can reach the container

	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
}

// newExposer returns an exposer of sb's sandboxes running its relays
// through docker.
func newExposer(sb Sandboxes, docker Containers, log zerolog.Logger) *exposer {
	return &exposer{sb: sb, docker: docker, log: log, exposed: map[string][]*exposure{}}
}

// ExposePort makes the sandbox's port answer on a free port of the host's
// 127.0.0.1, until Close, the sandbox stops or the sidecar ends. Exposing
// a port again returns the same host port.
func (e *exposer) ExposePort(ctx context.Context, project string, port int) (Exposed, error) {
	project, err := projectfs.Canonical(project)
	if err != nil {
		return Exposed{}, err
	}
	if port < 1 || port > 65535 {
		return Exposed{}, &service.ArgumentError{Name: "port", Reason: "must be from 1 to 65535"}
	}
	if x := e.find(project, port); x != nil {
		return x.Exposed, nil
	}
	t, err := e.sb.RelayTarget(ctx, project)
	if err != nil {
		return Exposed{}, err
	}
	return e.expose(ctx, t, port)
}

// expose makes port of t's container answer on a free port of the host's
// 127.0.0.1, or returns the one that does.
func (e *exposer) expose(ctx context.Context, t service.RelayTarget, port int) (Exposed, error) {
	project := t.Project
	if x := e.find(project, port); x != nil {
		return x.Exposed, nil
	}
	if err := e.check(ctx, t); err != nil {
		return Exposed{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Exposed{}, fmt.Errorf("listen on the host: %w", err)
	}
	hostPort := ln.Addr().(*net.TCPAddr).Port
	x := &exposure{
		Exposed: Exposed{Port: port, HostPort: hostPort, URL: "http://127.0.0.1:" + strconv.Itoa(hostPort) + "/"},
		project: project, ln: ln, conns: map[net.Conn]struct{}{},
		gw: e.gateway(ctx, t, port),
	}
	x.pool = relay.NewPool(warmRelays, func(ctx context.Context) (relay.Session, error) {
		return e.docker.ExecAttach(ctx, t.ContainerID, helper(t, relay.RoleConnect, strconv.Itoa(port)))
	})
	e.mu.Lock()
	if prev := e.findLocked(project, port); prev != nil { // exposed meanwhile
		e.mu.Unlock()
		x.close()
		return prev.Exposed, nil
	}
	e.exposed[project] = append(e.exposed[project], x)
	e.mu.Unlock()
	if x.gw == nil {
		x.pool.Fill()
	}
	go e.serve(x)
	e.log.Info().Str("project", project).Int("port", port).Int("hostPort", hostPort).Bool("direct", x.gw != nil).Msg("exposed a sandbox port")
	return x.Exposed, nil
}

// gateway starts the direct route to the port, where there is one.
func (e *exposer) gateway(ctx context.Context, t service.RelayTarget, port int) *gateway {
	if e.execOnly {
		return nil
	}
	g, err := e.startGateway(ctx, t, port)
	if err != nil {
		e.log.Debug().Err(err).Int("port", port).Msg("exposed port: no direct route, exec relays carry it")
	}
	return g
}

// check makes sure the sandbox runs and has what the relay needs.
func (e *exposer) check(ctx context.Context, t service.RelayTarget) error {
	res, err := e.docker.Exec(ctx, t.ContainerID, service.ExecSpec{
		Cmd: []string{"python3", "-I", "-S", "-c", "import socket"}, User: t.User, WorkDir: "/", Timeout: checkTimeout, MaxOutput: 4096,
	})
	switch {
	case err != nil:
		return err
	case res.ExitCode != 0:
		return fmt.Errorf("the sandbox cannot carry a port: python3 -I -S -c 'import socket' exited %d: %s", res.ExitCode, res.Stderr)
	}
	return nil
}

// serve accepts the host's connections to x until its listener closes,
// and carries each over a relay of its own.
func (e *exposer) serve(x *exposure) {
	for {
		conn, err := x.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				e.log.Warn().Err(err).Int("port", x.Port).Msg("exposed port: accept failed")
			}
			return
		}
		if !x.track(conn) {
			conn.Close()
			return
		}
		go func() {
			defer x.untrack(conn)
			e.carry(x, conn)
		}()
	}
}

// carry relays one connection: over the direct route if there is one,
// else (or if it fails) over an exec relay.
func (e *exposer) carry(x *exposure, conn net.Conn) {
	if e.sb != nil {
		e.sb.Touch(x.project) // a connection is a use, for the idle policy
	}
	x.mu.Lock()
	gw := x.gw
	x.mu.Unlock()
	if gw != nil {
		direct, err := gw.dial()
		if err == nil {
			relay.Join(conn.(*net.TCPConn), direct)
			return
		}
		e.log.Info().Err(err).Int("port", x.Port).Msg("exposed port: the direct route failed, an exec relay carries it")
	}
	inside, err := x.pool.Get(context.Background())
	if err != nil {
		e.log.Info().Err(err).Int("port", x.Port).Msg("exposed port: no relay into the sandbox")
		conn.Close()
		return
	}
	relay.Join(conn.(*net.TCPConn), inside)
	if stderr := inside.Stderr(); stderr != "" {
		e.log.Info().Int("port", x.Port).Str("relay", stderr).Msg("exposed port: the relay said")
	}
}

// track adds a connection, unless x is closed.
func (x *exposure) track(conn net.Conn) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.conns == nil {
		return false
	}
	x.conns[conn] = struct{}{}
	return true
}

func (x *exposure) untrack(conn net.Conn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.conns, conn)
}

// close stops the listener and ends every connection and waiting relay.
func (x *exposure) close() {
	x.ln.Close()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.gw != nil {
		x.gw.session.Close()
	}
	for c := range x.conns {
		c.Close()
	}
	x.conns = nil
	x.pool.Close()
}

func (e *exposer) find(project string, port int) *exposure {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.findLocked(project, port)
}

func (e *exposer) findLocked(project string, port int) *exposure {
	i := slices.IndexFunc(e.exposed[project], func(x *exposure) bool { return x.Port == port })
	if i < 0 {
		return nil
	}
	return e.exposed[project][i]
}

// ExposedPorts lists a project's exposed ports, by port.
func (e *exposer) ExposedPorts(project string) []Exposed {
	if canonical, err := projectfs.Canonical(project); err == nil {
		project = canonical
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []Exposed{}
	for _, x := range e.exposed[project] {
		out = append(out, x.Exposed)
	}
	slices.SortFunc(out, func(a, b Exposed) int { return a.Port - b.Port })
	return out
}

// ClosePort ends the exposure of a project's port and its connections; false
// if it was not exposed.
func (e *exposer) ClosePort(project string, port int) (bool, error) {
	project, err := projectfs.Canonical(project)
	if err != nil {
		return false, err
	}
	e.mu.Lock()
	list := e.exposed[project]
	i := slices.IndexFunc(list, func(x *exposure) bool { return x.Port == port })
	if i < 0 {
		e.mu.Unlock()
		return false, nil
	}
	x := list[i]
	e.exposed[project] = slices.Delete(list, i, i+1)
	e.mu.Unlock()
	x.close()
	return true, nil
}

// closeProject ends every exposure of a project.
func (e *exposer) closeProject(project string) {
	e.mu.Lock()
	list := e.exposed[project]
	delete(e.exposed, project)
	e.mu.Unlock()
	for _, x := range list {
		x.close()
	}
	if len(list) > 0 {
		e.log.Info().Str("project", project).Int("ports", len(list)).Msg("closed the exposed ports of a sandbox that is not running")
	}
}

// closeAll ends every exposure.
func (e *exposer) closeAll() {
	e.mu.Lock()
	projects := slices.Collect(maps.Keys(e.exposed))
	e.mu.Unlock()
	for _, p := range projects {
		e.closeProject(p)
	}
}
