package egress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Containers is the part of Docker egress uses; *engine.Client is one.
type Containers interface {
	RunAttached(ctx context.Context, spec service.HelperSpec) (service.ExecSession, error)
	// ExecAttach runs the finder of a connection's process (who.go).
	ExecAttach(ctx context.Context, id string, spec service.ExecSpec) (service.ExecSession, error)
	// RunningIDs finds the helpers that carry a sandbox (Carried).
	RunningIDs(ctx context.Context, labels map[string]string) ([]string, error)
	InspectContainer(ctx context.Context, idOrName string) (service.Container, error)
	// IdleIDs and RemoveContainer sweep the helpers left behind (helpers.go).
	IdleIDs(ctx context.Context, labels map[string]string, before time.Time) ([]string, error)
	RemoveContainer(ctx context.Context, id string) error
}

// Labels of the helper containers, for reconciliation and prune: they are
// not sandboxes, and carry neither of service's labels.
const (
	LabelHelper   = "pilot.egress"         // the scope, like service.LabelSandbox
	LabelHelperOf = "pilot.egress.sandbox" // the sandbox container's ID
)

// Config is how an Enforcer runs.
type Config struct {
	// Image is the desktop image: the helper runs it, never a project's
	// own image, whose Dockerfile could have planted its own nft,
	// python3 or proxy.
	Image string
	// Scope is the sidecar's scope (service.Config.Scope).
	Scope string
	Judge Judge
	// Resolver looks up DNS types other than A for names the judge
	// allows; nil is the host's resolver.
	Resolver Resolver
	// WhoWait bounds the look for who opened a connection (who.go);
	// whoWait when zero.
	WhoWait time.Duration
	// OnEntry, when set, hears every new or finished log entry.
	OnEntry func(Entry)
	Logger  zerolog.Logger
}

// Enforcer carries the proxies of the sandboxes this process serves: one
// pilot-sandbox process at a time carries a sandbox's (only one proxy can
// bind its ports); the others watch and take over when it ends.
type Enforcer struct {
	docker Containers
	cfg    Config
	causes *causes

	mu   sync.Mutex      // guards runs
	runs map[string]*run // by sandbox container ID

	swept      sync.Once      // the sweep of helpers left behind, begun
	background sync.WaitGroup // that sweep, which Close waits for
}

// New returns an enforcer starting its helpers through docker.
func New(docker Containers, cfg Config) *Enforcer {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	return &Enforcer{docker: docker, cfg: cfg, causes: newCauses(), runs: map[string]*run{}}
}

// run is this process's part in one run of a sandbox's network: the
// goroutine that carries its proxy or waits to take it over, until stop.
// A run is in Enforcer.runs from its Start to its Stop.
type run struct {
	sb        *sandbox
	startedAt time.Time          // the container's start: a restart is a new run
	stop      context.CancelFunc // ends the run's context, which keep holds
	started   chan struct{}      // closed once Start's first launch is over
	err       error              // that launch's failure; read after started
	done      chan struct{}      // closed when keep has ended

	mu       sync.Mutex // guards carrying and why
	carrying bool
	why      string
}

// Start is the hook service calls once a sandbox with a network has
// started, before it reports it running and before any exec as the
// sandbox user: it returns when the egress rules are in the sandbox's
// network namespace, with this process carrying its proxy or another
// one doing so already. An error means the rules may not be in: the
// start must fail (fail closed). A second Start of the same run waits for
// the first's answer; a Start of a container that started again since
// (a new network namespace, without rules) ends the old run and begins a
// new one.
func (e *Enforcer) Start(ctx context.Context, project, containerID string) error {
	c, err := e.docker.InspectContainer(ctx, containerID)
	if err == nil && !c.Running {
		err = errors.New("it is not running")
	}
	if err != nil {
		return fmt.Errorf("the sandbox's container: %w", err)
	}
	e.mu.Lock()
	if r, ok := e.runs[containerID]; ok && r.startedAt.Equal(c.StartedAt) {
		e.mu.Unlock()
		select {
		case <-r.started:
			return r.err
		case <-ctx.Done():
			return ctx.Err()
		}
	} else if ok {
		r.stop()
	}
	runCtx, r := e.newRun(project, containerID, c.StartedAt)
	e.runs[containerID] = r
	e.mu.Unlock()
	e.sweepOnce()
	finding := e.startWho(runCtx, r)
	sess, ch, err := e.launch(ctx, containerID)
	finding()
	switch {
	case err != nil && !errors.Is(err, ErrInUse):
		r.err = err
		e.drop(containerID, r)
		close(r.done)
	case sess != nil:
		r.set(true, "")
	default:
		r.set(false, ErrInUse.Error())
	}
	close(r.started)
	if r.err == nil {
		go e.keep(runCtx, r, sess, ch)
	}
	return r.err
}

// Loaded returns the start time of the run of the container whose rules
// a Start of this process put in place (false if none did, or it failed):
// what the user's other processes may be told (service, commandNetwork).
func (e *Enforcer) Loaded(containerID string) (time.Time, bool) {
	e.mu.Lock()
	r, ok := e.runs[containerID]
	e.mu.Unlock()
	if !ok {
		return time.Time{}, false
	}
	select {
	case <-r.started:
		return r.startedAt, r.err == nil
	default:
		return time.Time{}, false
	}
}

// startWho starts the run's finder of who opened a connection (who.go)
// beside the helper's launch, and returns the wait for it: a sandbox
// whose finder fails goes on without hints.
func (e *Enforcer) startWho(runCtx context.Context, r *run) (wait func()) {
	started := make(chan struct{})
	go func() {
		defer close(started)
		f, err := startFinder(runCtx, e.docker, r.sb.id, cmp.Or(e.cfg.WhoWait, whoWait))
		if err != nil {
			e.cfg.Logger.Debug().Err(err).Str("project", r.sb.project).Msg("no finder of connections' processes")
			return
		}
		context.AfterFunc(runCtx, f.close)
		h := e.hints(f)
		r.sb.hints.Store(&h)
	}()
	return func() { <-started }
}

// drop ends run r of the container, if it is still the current one.
func (e *Enforcer) drop(containerID string, r *run) {
	e.mu.Lock()
	if e.runs[containerID] == r {
		delete(e.runs, containerID)
	}
	e.mu.Unlock()
	r.stop()
}

func (e *Enforcer) newRun(project, id string, startedAt time.Time) (context.Context, *run) {
	ctx, stop := context.WithCancel(context.Background())
	return ctx, &run{
		sb: &sandbox{project: project, id: id, judge: e.cfg.Judge, resolver: e.cfg.Resolver,
			book: newAddressBook(), log: newConnLog(e.cfg.OnEntry)},
		startedAt: startedAt, stop: stop, started: make(chan struct{}), done: make(chan struct{}),
	}
}

// Stop is the hook service calls when a sandbox stopped: this process's
// proxy for it ends (a stopped sandbox has no network to carry).
func (e *Enforcer) Stop(containerID string) {
	e.mu.Lock()
	r, ok := e.runs[containerID]
	delete(e.runs, containerID)
	e.mu.Unlock()
	if ok {
		r.stop()
	}
}

// Close ends every proxy this process carries, and waits for them.
func (e *Enforcer) Close() {
	e.mu.Lock()
	runs := e.runs
	e.runs = map[string]*run{}
	e.mu.Unlock()
	for _, r := range runs {
		r.stop()
		<-r.done
	}
	e.background.Wait()
}

// Carrier says whether this process carries the sandbox's proxy, and when
// it does not, why (another process does, or none can).
func (e *Enforcer) Carrier(containerID string) (carrying bool, why string) {
	e.mu.Lock()
	r, ok := e.runs[containerID]
	e.mu.Unlock()
	if !ok {
		return false, "pilot-sandbox does not carry this sandbox's network here"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.carrying, r.why
}

func (r *run) set(carrying bool, why string) {
	r.mu.Lock()
	r.carrying, r.why = carrying, why
	r.mu.Unlock()
}

// The helper's command and bounds. It runs as root only to load the rules
// and bind its ports (CapAdd), then as pilot-net with no capability
// (proxy.py). Its threads count against PidsLimit: two for each joined
// connection, MAX_HELD (512) of them at most.
var (
	proxyCmd    = []string{"python3", "-B", "/usr/local/lib/pilot-net/proxy.py"}
	proxyLimits = service.Limits{MemoryBytes: 256 << 20, PidsLimit: 1200, NanoCPUs: 1e9}
)

// readyTimeout bounds a helper's start to its first line: the engine's
// start (0.2 to 0.5 s here), nft, and Python's.
const readyTimeout = 30 * time.Second

// launch starts a helper for the sandbox and waits until its rules are in
// and its proxy listens (ErrInUse: another process's proxy listens).
func (e *Enforcer) launch(ctx context.Context, id string) (service.ExecSession, *channel, error) {
	sess, err := e.docker.RunAttached(ctx, service.HelperSpec{
		Image:     e.cfg.Image,
		Labels:    map[string]string{LabelHelper: e.cfg.Scope, LabelHelperOf: id},
		User:      "0:0",
		Cmd:       proxyCmd,
		NetworkOf: id,
		CapAdd:    []string{"NET_ADMIN", "SETUID", "SETGID"},
		Limits:    proxyLimits,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start the network helper: %w", err)
	}
	ch := newChannel(sess)
	first := make(chan proxyMsg, 1)
	failed := make(chan error, 1)
	go func() {
		m, err := ch.next()
		if err != nil {
			failed <- err
			return
		}
		first <- m
	}()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case m := <-first:
		if err := readyOf(m); err != nil {
			sess.Close()
			return nil, nil, err
		}
		return sess, ch, nil
	case err = <-failed:
		err = fmt.Errorf("the network helper ended before it was ready: %v %s", err, strings.TrimSpace(sess.Stderr()))
	case <-timer.C:
		err = fmt.Errorf("the network helper was not ready within %s", readyTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	sess.Close()
	return nil, nil, err
}

func readyOf(m proxyMsg) error {
	switch {
	case m.T == "ready":
		return nil
	case m.T == "error" && strings.HasPrefix(m.Error, "in use"):
		return ErrInUse
	case m.T == "error":
		return fmt.Errorf("the network helper failed: %s", m.Error)
	}
	return fmt.Errorf("%w: %q before ready", errProtocol, m.T)
}

// keep carries the sandbox's proxy while this process can, and otherwise
// watches for the carrier to end, to take over; it ends with ctx (the
// run's).
func (e *Enforcer) keep(ctx context.Context, r *run, sess service.ExecSession, ch *channel) {
	defer close(r.done)
	for {
		if sess != nil {
			e.carry(ctx, r, sess, ch)
		} else {
			r.set(false, ErrInUse.Error())
		}
		if ctx.Err() != nil {
			return
		}
		sess, ch = e.retake(ctx, r)
		if sess == nil {
			return
		}
	}
}

// carry serves one proxy until it ends.
func (e *Enforcer) carry(ctx context.Context, r *run, sess service.ExecSession, ch *channel) {
	r.set(true, "")
	stopClosing := context.AfterFunc(ctx, func() { sess.Close() })
	defer stopClosing()
	err := newCarrier(r.sb, ch).serve(ctx)
	sess.Close()
	why := "the network proxy ended"
	if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		why = fmt.Sprintf("the network proxy ended: %v", err)
	}
	if ctx.Err() == nil {
		e.cfg.Logger.Warn().Str("project", r.sb.project).Str("stderr", tail(sess.Stderr(), 500)).Msg(why)
	}
	r.set(false, why+"; the sandbox has no way out until a pilot-sandbox process carries it again")
}

// retakeDelay is how often a process that does not carry a sandbox's proxy
// looks whether any process does; a failed start waits longer each time,
// up to retakeMax.
const (
	retakeDelay = time.Second
	retakeMax   = 10 * time.Second
)

// retake waits until no process carries the sandbox's proxy, then starts
// one; nil once ctx ends.
func (e *Enforcer) retake(ctx context.Context, r *run) (service.ExecSession, *channel) {
	delay := retakeDelay
	for {
		if carried, err := e.Carried(ctx, r.sb.id); err == nil && !carried {
			sess, ch, err := e.launch(ctx, r.sb.id)
			switch {
			case err == nil:
				return sess, ch
			case errors.Is(err, ErrInUse):
				delay = retakeDelay
			default:
				r.set(false, err.Error())
				delay = min(2*delay, retakeMax)
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(delay):
		}
	}
}
