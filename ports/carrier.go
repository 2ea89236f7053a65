package ports

import (
	"context"
	"sync"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/relay"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Sandboxes is what the carrier needs of the sandboxes; *service.Manager
// is one.
type Sandboxes interface {
	// ExecArgv runs a command in the project's sandbox as its user: what
	// listens there, and pilot-open.
	ExecArgv(ctx context.Context, project string, spec service.ExecSpec) (service.ExecResult, error)
	// Touch records a use of the sandbox, for the idle policy.
	Touch(project string)
	// Subscribe returns the sandboxes' events and the function that ends
	// the subscription, closing the channel.
	Subscribe() (<-chan service.Event, func())
	// StateDir holds the user's forwarded ports (projectfs.Forwards).
	StateDir() string
	// RelayTarget is where the project's relays run: its sandbox's
	// current run; service.ErrNotRunning when it does not run.
	RelayTarget(ctx context.Context, project string) (service.RelayTarget, error)
	// BrowserTarget is RelayTarget for a sandbox whose image has a
	// browser; service.ErrNoBrowser when it has none.
	BrowserTarget(ctx context.Context, project string) (service.RelayTarget, error)
}

// Containers runs commands in a container by its ID; the engine's client
// is one. Every relay runs in the container of its target's run: the
// desktop relay's before the sandbox is "running" for its exec tools.
type Containers interface {
	Exec(ctx context.Context, id string, spec service.ExecSpec) (service.ExecResult, error)
	ExecAttach(ctx context.Context, id string, spec service.ExecSpec) (service.ExecSession, error)
}

// helper is the exec of the relay program in role in t's container: as
// t's user (the desktop's, whom the exec user cannot signal, trace or
// read: issue 28, N1), in /, where nothing of the sandbox user's is.
func helper(t service.RelayTarget, role string, args ...string) service.ExecSpec {
	return service.ExecSpec{Cmd: relay.Command(role, args...), User: t.User, WorkDir: "/"}
}

// Options are a carrier's choices.
type Options struct {
	// Project, when set, is the one project whose forwarded ports the
	// carrier applies (the mcp process serves one project; the user's
	// forwards of the others are for the processes that serve them). The
	// other relays follow every sandbox: one of another project that this
	// process reached still closes as it stops.
	Project string
	// Desktops carries the desktop ports of sandboxes without a network
	// for the manager (service.Config.DesktopPorts): the carrier closes
	// them as their sandbox stops. Nil if this process carries none.
	Desktops *DesktopRelay
	Log      zerolog.Logger
}

// Carrier owns every relay of this process: the exposed and forwarded
// ports, the desktop ports of sandboxes without a network, and the
// DevTools relays of sandboxes with a browser. It follows
// the sandboxes' events, once for all of them: a project's relays close
// as its sandbox stops, and its forwards are applied as it runs. It
// serves the protocol's sandbox/ports methods and sandbox/browser.
type Carrier struct {
	sb       Sandboxes
	ex       *exposer
	fw       *forwarder
	devtools *devtools
	desktops *DesktopRelay
	project  string

	unsubscribe func()
	closing     sync.Once
	done        chan struct{} // closed once every relay is closed
}

// NewCarrier returns a carrier for sb's sandboxes, whose relays run in
// their containers through docker, following their events until Close.
func NewCarrier(sb Sandboxes, docker Containers, opts Options) *Carrier {
	c := &Carrier{
		sb:       sb,
		ex:       newExposer(sb, docker, opts.Log),
		fw:       newForwarder(sb, docker, projectfs.NewForwards(sb.StateDir()), opts.Log),
		devtools: &devtools{docker: docker, byProject: map[string]*devtoolsRelay{}},
		desktops: opts.Desktops,
		project:  opts.Project,
		done:     make(chan struct{}),
	}
	events, unsubscribe := sb.Subscribe()
	c.unsubscribe = unsubscribe
	go c.follow(events)
	return c
}

// follow closes a project's relays when its sandbox is no longer running
// (a paused one keeps them) and applies its forwards when it runs, until
// events closes; then it closes every relay.
func (c *Carrier) follow(events <-chan service.Event) {
	defer close(c.done)
	for ev := range events {
		switch {
		case ev.Kind != service.EventState:
		case ev.State != nil && ev.State.Status == service.StatusPaused:
			// Frozen, not gone: the relays and their connections wait
			// for the resume (docs/sandbox.md, Pause).
		case ev.State == nil || ev.State.Status != service.StatusRunning:
			c.stopped(ev.Project)
		case c.project == "" || ev.Project == c.project:
			c.fw.running(ev.Project)
		}
	}
	c.fw.closeAll()
	c.ex.closeAll()
	c.devtools.closeAll()
	if c.desktops != nil {
		c.desktops.ex.closeAll()
	}
}

// stopped closes the relays of a project whose sandbox is not running.
func (c *Carrier) stopped(project string) {
	c.ex.closeProject(project)
	c.fw.stopProject(project)
	c.devtools.closeProject(project, "")
	if c.desktops != nil {
		c.desktops.ex.closeProject(project)
	}
}

// Close stops following the sandboxes and closes every relay.
func (c *Carrier) Close() {
	c.closing.Do(c.unsubscribe)
	<-c.done
}

// ExposePort makes the sandbox's port answer on a free port of the host's
// 127.0.0.1, until ClosePort, the sandbox stops or the carrier closes.
// Exposing a port again returns the same host port.
func (c *Carrier) ExposePort(ctx context.Context, project string, port int) (Exposed, error) {
	return c.ex.ExposePort(ctx, project, port)
}

// ExposedPorts lists a project's exposed ports, by port.
func (c *Carrier) ExposedPorts(project string) []Exposed { return c.ex.ExposedPorts(project) }

// ClosePort ends the exposure of a project's port and its connections;
// false if it was not exposed.
func (c *Carrier) ClosePort(project string, port int) (bool, error) {
	return c.ex.ClosePort(project, port)
}

// ListeningPorts lists what listens on TCP in the project's sandbox but
// the sandbox's own machinery (usersOwn): what a user may expose, and
// the forwarded ports.
func (c *Carrier) ListeningPorts(ctx context.Context, project string) ([]Listening, error) {
	ls, err := listen(ctx, c.sb, project)
	if err != nil {
		return nil, err
	}
	forwarded, err := c.fw.ForwardedPorts(project)
	return usersOwn(ls, forwarded), err
}

// ForwardPort makes localhost:port in the project's sandbox reach the
// host's 127.0.0.1:hostPort (0: the same number), now if it runs, and at
// every start. Forwarding a port again with another hostPort changes it.
func (c *Carrier) ForwardPort(ctx context.Context, project string, port, hostPort int) (Forwarded, error) {
	return c.fw.ForwardPort(ctx, project, port, hostPort)
}

// ForwardedPorts lists the project's forwarded ports, by port, with why
// one is not in effect in its running sandbox.
func (c *Carrier) ForwardedPorts(project string) ([]Forwarded, error) {
	return c.fw.ForwardedPorts(project)
}

// CloseForward stops forwarding the project's port, and ends its
// connections; false if it was not forwarded.
func (c *Carrier) CloseForward(project string, port int) (bool, error) {
	return c.fw.CloseForward(project, port)
}
