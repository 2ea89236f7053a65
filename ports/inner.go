package ports

import (
	"context"
	"errors"
	"fmt"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// An inner forward is a forwarded port of the sidecar's own (the model
// gateway's, docs/models.md): the same listener and relays as the
// user's forwards, for the sandbox's current run only, never in the
// user's state nor in their list, and never taken over by a forward of
// theirs. Each process that asks gets its own port among the ones it
// offers (several processes may carry into one sandbox: serve and a
// terminal's task run), the first that nothing in the sandbox listens on.

// CarryInto makes one of ports in the project's running sandbox reach
// the host's 127.0.0.1:hostPort, until the sandbox stops or the carrier
// closes, and returns which. Asked again in the same run for the same
// hostPort it returns the same port.
func (c *Carrier) CarryInto(ctx context.Context, project string, hostPort int, ports []int) (int, error) {
	return c.fw.carryInto(ctx, project, hostPort, ports)
}

func (f *forwarder) carryInto(ctx context.Context, project string, hostPort int, ports []int) (int, error) {
	project, err := projectfs.Canonical(project)
	if err != nil {
		return 0, err
	}
	f.ops.Lock()
	defer f.ops.Unlock()
	t, ok, err := f.target(ctx, project)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, service.ErrNotRunning
	}
	set := f.prepare(project, t.Run())
	if set == nil {
		return 0, errors.New("the relays are closing")
	}
	if port := f.innerPort(project, hostPort); port != 0 {
		return port, nil
	}
	for _, port := range ports {
		if f.liveListener(project, port) != nil {
			continue // the user forwards it
		}
		l, err := f.startListener(ctx, t, Forwarded{Port: port, HostPort: hostPort})
		if errors.Is(err, errInUse) {
			continue
		}
		if err != nil {
			return 0, err
		}
		l.inner = true
		f.setLive(project, set, l)
		f.log.Debug().Str("project", project).Int("port", port).Msg("carried a port of the sidecar's into the sandbox")
		return port, nil
	}
	return 0, fmt.Errorf("every port the sidecar may take in the sandbox (%d to %d) is in use there", ports[0], ports[len(ports)-1])
}

// innerPort is the port of the project's inner forward to hostPort in
// its current set, or 0.
func (f *forwarder) innerPort(project string, hostPort int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if set := f.projects[project]; set != nil {
		for port, l := range set.live {
			if l.inner && l.hostPort() == hostPort {
				return port
			}
		}
	}
	return 0
}

// innerListener says whether the project's listener on port is an inner
// forward.
func (f *forwarder) innerListener(project string, port int) bool {
	l := f.liveListener(project, port)
	return l != nil && l.inner
}

// errInner refuses a user's forward of a port the sidecar carries.
func errInner(port int) error {
	return &service.ArgumentError{Name: "port", Reason: fmt.Sprintf("port %d in the sandbox is the model gateway's: choose another", port)}
}
