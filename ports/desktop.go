package ports

import (
	"context"
	"errors"
	"sync"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Containers runs commands in a container by its ID; the engine's client
// is one. The desktop relay needs no more (it carries a desktop before it
// is ready, when the sandbox is not yet "running" for its exec tools), nor
// a DevTools relay (its relays belong to one run of the container).
type Containers interface {
	Exec(ctx context.Context, id string, spec service.ExecSpec) (service.ExecResult, error)
	ExecAttach(ctx context.Context, id string, spec service.ExecSpec) (service.ExecSession, error)
}

// DesktopRelay carries the desktop ports (websockify, VNC) of sandboxes
// without a network to host ports on 127.0.0.1 (service.DesktopPorts),
// over exec relays like an exposed port's: the engine publishes no port of
// such a container, and the host has no route to it. The ports live until
// the sandbox stops, another container of the project is carried, or the
// process that serves them ends (Carrier).
type DesktopRelay struct {
	docker Containers
	ex     *exposer

	mu  sync.Mutex        // guards ids
	ids map[string]string // project -> the container whose ports are carried
}

// NewDesktopRelay returns a relay running its execs through docker.
func NewDesktopRelay(docker Containers, log zerolog.Logger) *DesktopRelay {
	r := &DesktopRelay{docker: docker, ids: map[string]string{}}
	// No direct route: a container without a network has no address.
	r.ex = &exposer{sb: containerSandboxes{r}, log: log, execOnly: true, exposed: map[string][]*exposure{}}
	return r
}

// HostPorts returns the host ports carrying ports of the project's
// container id, listening from the first call on.
func (r *DesktopRelay) HostPorts(ctx context.Context, project, id string, ports []int) (map[int]int, error) {
	r.mu.Lock()
	prev := r.ids[project]
	r.ids[project] = id
	r.mu.Unlock()
	if prev != "" && prev != id {
		r.ex.closeProject(project) // a former container's ports lead nowhere
	}
	out := make(map[int]int, len(ports))
	for _, p := range ports {
		x, err := r.ex.ExposePort(ctx, project, p)
		if err != nil {
			return nil, err
		}
		out[p] = x.HostPort
	}
	return out, nil
}

// errNoContainer is a relay asked for a project it carries no container of.
var errNoContainer = errors.New("no container of this project is carried")

// containerSandboxes runs the exposer's relays in the container the relay
// carries for a project, as the sandbox user, like Manager.ExecArgv.
type containerSandboxes struct{ r *DesktopRelay }

func (s containerSandboxes) id(project string) (string, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if id := s.r.ids[project]; id != "" {
		return id, nil
	}
	return "", errNoContainer
}

func (s containerSandboxes) ExecArgv(ctx context.Context, project string, spec service.ExecSpec) (service.ExecResult, error) {
	id, err := s.id(project)
	if err != nil {
		return service.ExecResult{}, err
	}
	spec.User = desktop.User
	return s.r.docker.Exec(ctx, id, spec)
}

func (s containerSandboxes) ExecAttachArgv(ctx context.Context, project string, spec service.ExecSpec) (service.ExecSession, error) {
	id, err := s.id(project)
	if err != nil {
		return nil, err
	}
	spec.User = desktop.User
	return s.r.docker.ExecAttach(ctx, id, spec)
}
