package ports

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Forwarded is a host port reached from the sandbox: inside it,
// localhost:Port is the host's 127.0.0.1:HostPort.
type Forwarded struct {
	Port     int `json:"port"`
	HostPort int `json:"hostPort"`
	// Error says why it is not in effect in the running sandbox, when it
	// could not be applied there (another program took the port).
	Error string `json:"error,omitempty"`
}

// maxForwards bounds the ports forwarded into one sandbox: each is a
// listener process in it, and a relay waiting.
const maxForwards = 16

var errTooMany = &service.ArgumentError{Name: "port", Reason: fmt.Sprintf("at most %d ports may be forwarded into one sandbox: close one first", maxForwards)}

// forwards says whether list has port.
func forwards(list []projectfs.Forward, port int) bool {
	return slices.ContainsFunc(list, func(p projectfs.Forward) bool { return p.Port == port })
}

// forwarder keeps the forwarded ports of every project: the list in the
// user's state (projectfs.Forwards), applied in each running sandbox
// this process serves, at every start.
type forwarder struct {
	sb       Sandboxes
	docker   Containers
	store    projectfs.Forwards
	log      zerolog.Logger
	execOnly bool // never the direct route (direct.go): for tests

	ops     sync.Mutex     // one change of listeners at a time
	applies sync.WaitGroup // restores under way

	mu       sync.Mutex // guards projects and stopped
	projects map[string]*forwardSet
	stopped  bool
	quit     chan struct{} // closed as it stops
}

// forwardSet is a project's listeners in its sandbox's current run.
type forwardSet struct {
	run  string // the run they belong to (service.RelayTarget.Run)
	live map[int]*listener
	errs map[int]string // why a forward is not live in this run
	// carried are the forwards another process of the user's carries in
	// this run (carried.go); watching, whether takeOver runs for them.
	carried  map[int]bool
	watching bool
}

// newForwarder returns a forwarder of sb's sandboxes that keeps its
// lists in store and runs its relays through docker.
func newForwarder(sb Sandboxes, docker Containers, store projectfs.Forwards, log zerolog.Logger) *forwarder {
	return &forwarder{sb: sb, docker: docker, store: store, log: log, projects: map[string]*forwardSet{}, quit: make(chan struct{})}
}

// target is where the project's listeners run; ok false when its sandbox
// does not run (the next start applies its forwards).
func (f *forwarder) target(ctx context.Context, project string) (t service.RelayTarget, ok bool, err error) {
	t, err = f.sb.RelayTarget(ctx, project)
	if errors.Is(err, service.ErrNotRunning) || errors.Is(err, service.ErrNoSandbox) {
		return t, false, nil
	}
	return t, err == nil, err
}

func checkPort(name string, port int) error {
	if port < 1 || port > 65535 {
		return &service.ArgumentError{Name: name, Reason: "must be from 1 to 65535"}
	}
	return nil
}

// ForwardPort makes localhost:port in the project's sandbox reach the
// host's 127.0.0.1:hostPort (0: the same number), now if it runs, and at
// every start. Forwarding a port again with another hostPort changes it.
func (f *forwarder) ForwardPort(ctx context.Context, project string, port, hostPort int) (Forwarded, error) {
	project, err := projectfs.Canonical(project)
	if err != nil {
		return Forwarded{}, err
	}
	if hostPort == 0 {
		hostPort = port
	}
	if err := errors.Join(checkPort("port", port), checkPort("hostPort", hostPort)); err != nil {
		return Forwarded{}, err
	}
	fw := Forwarded{Port: port, HostPort: hostPort}
	f.ops.Lock()
	defer f.ops.Unlock()
	if list, err := f.store.Read(project); err == nil && len(list) >= maxForwards && !forwards(list, port) {
		return Forwarded{}, errTooMany
	}
	started, err := f.applyOne(ctx, project, fw)
	if err != nil {
		return Forwarded{}, err
	}
	err = f.store.Change(project, func(list []projectfs.Forward) ([]projectfs.Forward, error) {
		if len(list) >= maxForwards && !forwards(list, port) {
			return nil, errTooMany // another process added some meanwhile
		}
		list = slices.DeleteFunc(list, func(p projectfs.Forward) bool { return p.Port == port })
		return append(list, projectfs.Forward{Port: port, HostPort: hostPort}), nil
	})
	if err != nil {
		if started != nil {
			f.drop(project, started)
		}
		if errors.Is(err, service.ErrInvalidArgument) {
			return Forwarded{}, err
		}
		return Forwarded{}, fmt.Errorf("keep the forwarded port in %s: %w", f.store.Dir(), err)
	}
	f.log.Info().Str("project", project).Int("port", port).Int("hostPort", hostPort).Msg("forwarded a host port into the sandbox")
	return fw, nil
}

// applyOne puts fw in effect in the project's sandbox if it runs, and
// returns the listener it started for it (nil if none: the sandbox is
// not running, or a listener was there already).
func (f *forwarder) applyOne(ctx context.Context, project string, fw Forwarded) (*listener, error) {
	t, ok, err := f.target(ctx, project)
	if !ok {
		return nil, err
	}
	set := f.prepare(project, t.Run())
	if set == nil {
		return nil, nil // the sidecar is ending
	}
	if l := f.liveListener(project, fw.Port); l != nil {
		if l.inner {
			return nil, errInner(fw.Port)
		}
		l.setHostPort(fw.HostPort)
		return nil, nil
	}
	l, err := f.startListener(ctx, t, fw)
	if errors.Is(err, errCarried) {
		f.carriedElsewhere(project, set, fw.Port)
		return nil, nil
	}
	if errors.Is(err, errInUse) {
		return nil, f.inUse(ctx, project, fw.Port)
	}
	if errors.Is(err, service.ErrNotRunning) {
		return nil, nil // it stopped meanwhile: the next start applies it
	}
	if err != nil {
		return nil, err
	}
	f.setLive(project, set, l)
	return l, nil
}

// inUse is the error for a port something in the sandbox listens on.
func (f *forwarder) inUse(ctx context.Context, project string, port int) error {
	who := "something"
	if ls, err := listen(ctx, f.sb, project); err == nil {
		if i := slices.IndexFunc(ls, func(l Listening) bool { return l.Port == port }); i >= 0 && ls[i].Process != "" {
			who = ls[i].Process
		}
	}
	return &service.ArgumentError{Name: "port", Reason: fmt.Sprintf("%s already listens on port %d in the sandbox", who, port)}
}

// prepare returns the project's set for run, emptied of another run's
// listeners; nil once the forwarder has stopped.
func (f *forwarder) prepare(project, run string) *forwardSet {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return nil
	}
	set := f.projects[project]
	var old []*listener
	if set == nil || set.run != run {
		if set != nil {
			old = slices.Collect(maps.Values(set.live))
		}
		set = &forwardSet{run: run, live: map[int]*listener{}, errs: map[int]string{}, carried: map[int]bool{}}
		f.projects[project] = set
	}
	f.mu.Unlock()
	for _, l := range old {
		l.close()
	}
	return set
}

func (f *forwarder) liveListener(project string, port int) *listener {
	f.mu.Lock()
	defer f.mu.Unlock()
	if set := f.projects[project]; set != nil {
		return set.live[port]
	}
	return nil
}

// setLive records l in set, unless the set was replaced meanwhile (a new
// run): then l belongs to no run and is closed.
func (f *forwarder) setLive(project string, set *forwardSet, l *listener) {
	f.mu.Lock()
	current := f.projects[project] == set && !f.stopped
	if current {
		set.live[l.Port] = l
		delete(set.errs, l.Port)
		delete(set.carried, l.Port)
	}
	f.mu.Unlock()
	if !current {
		l.close()
	}
}

// drop closes l and forgets it.
func (f *forwarder) drop(project string, l *listener) {
	f.mu.Lock()
	if set := f.projects[project]; set != nil && set.live[l.Port] == l {
		delete(set.live, l.Port)
	}
	f.mu.Unlock()
	l.close()
}

// ended forgets a listener whose process ended on its own (killed in
// the sandbox, or the sandbox stopping), saying why; err is how its
// output ended. One lost with the engine's connection (a remote engine's
// link dropped) is started again once the engine answers.
func (f *forwarder) ended(l *listener, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	set := f.projects[l.target.Project]
	if set == nil || set.live[l.Port] != l {
		return // closed on purpose
	}
	delete(set.live, l.Port)
	set.errs[l.Port] = "its listener in the sandbox ended; it is applied again at the next start"
	f.log.Info().Err(err).Str("project", l.target.Project).Int("port", l.Port).Str("stderr", l.ctl.Stderr()).Msg("a forwarded port's listener ended")
	if errors.Is(err, service.ErrDockerUnavailable) && !f.stopped {
		set.errs[l.Port] = "the connection to the engine dropped; it is applied again once the engine answers"
		f.applies.Go(func() { f.restore(l.target.Project) })
	}
}
