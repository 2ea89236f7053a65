package ports

import (
	"context"
	"sync"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// DesktopRelay carries the desktop ports (websockify, VNC) of sandboxes
// without a network, and of every sandbox on a remote engine, to host
// ports on 127.0.0.1 (service.DesktopPorts), over exec relays like an
// exposed port's: the engine publishes no port of such a container (on a
// remote engine it would be on that machine's 127.0.0.1), and the host
// has no route to it. The ports live until
// the sandbox stops, another container of the project is carried, or the
// process that serves them ends (Carrier).
type DesktopRelay struct {
	ex *exposer

	mu  sync.Mutex        // guards ids
	ids map[string]string // project -> the container whose ports are carried
}

// NewDesktopRelay returns a relay running its execs through docker.
func NewDesktopRelay(docker Containers, log zerolog.Logger) *DesktopRelay {
	r := &DesktopRelay{ids: map[string]string{}}
	// No direct route: a container without a network has no address. No
	// Sandboxes either: the manager gives it its targets, and its
	// connections are not counted as uses for the idle policy.
	r.ex = &exposer{docker: docker, log: log, execOnly: true, exposed: map[string][]*exposure{}}
	return r
}

// HostPorts returns the host ports carrying ports of t's container,
// listening from the first call on.
func (r *DesktopRelay) HostPorts(ctx context.Context, t service.RelayTarget, ports []int) (map[int]int, error) {
	r.mu.Lock()
	prev := r.ids[t.Project]
	r.ids[t.Project] = t.ContainerID
	r.mu.Unlock()
	if prev != "" && prev != t.ContainerID {
		r.ex.closeProject(t.Project) // a former container's ports lead nowhere
	}
	out := make(map[int]int, len(ports))
	for _, p := range ports {
		x, err := r.ex.expose(ctx, t, p)
		if err != nil {
			return nil, err
		}
		out[p] = x.HostPort
	}
	return out, nil
}
