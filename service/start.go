package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/readiness"
)

// startLogLines is how much of its output a start that failed reports.
const startLogLines = 30

// Start brings the project's sandbox up and returns once its desktop really
// answers: it restarts a stopped container, or creates one (building the
// image first if it is missing or out of date). Starting a running sandbox
// returns its state. Concurrent starts of one project make one container.
func (m *Manager) Start(ctx context.Context, path string) (State, error) {
	trace := newStartTrace()
	b, err := m.lockProject(ctx, path)
	if err != nil {
		return State{}, err
	}
	defer m.unlockProject(b)
	trace.step("lock")
	c, err := m.find(ctx, b)
	trace.step("inspect")
	if err == nil && c.Paused() {
		st, err := m.resume(ctx, b, c, trace)
		m.logTimeline(b, trace, err)
		return st, err
	}
	if (err == nil && !c.Running) || errors.Is(err, ErrContainerNotFound) {
		release, err := m.admit(ctx, b)
		if err != nil {
			return State{}, err
		}
		defer release()
	}
	if errors.Is(err, ErrContainerNotFound) {
		c, err = m.create(ctx, b)
		trace.step("create")
	}
	if err != nil {
		m.settle(ctx, b)
		return State{}, err
	}
	st, err := m.launch(ctx, b, c, trace)
	m.logTimeline(b, trace, err)
	return st, err
}

// logTimeline notes where a start's time went, if it worked.
func (m *Manager) logTimeline(b *box, t *startTrace, err error) {
	if err == nil {
		m.log.Debug().Str("project", b.project).Str("steps", t.steps.String()).Int("probes", t.probes).Msg("start timeline")
	}
}

// create makes the project's container, building the image first if needed.
func (m *Manager) create(ctx context.Context, b *box) (Container, error) {
	spec, plan, err := m.containerSpec(ctx, b)
	if err != nil {
		return Container{}, err
	}
	if err := m.ensurePlan(ctx, b.project, plan, &spec); err != nil {
		return Container{}, err
	}
	m.progress(b.project, StageCreate, "Creating the sandbox container "+spec.Name, 0, 0)
	return m.createNamed(ctx, b, spec)
}

// containerSpec is the project's new container as its settings and the
// policy make it, and the image it needs. It announces the sandbox as
// starting once nothing the user must approve stands in the way.
func (m *Manager) containerSpec(ctx context.Context, b *box) (ContainerSpec, images.Plan, error) {
	name := m.containerName(b.project)
	pc, limits, err := m.projectLimits(ctx, b)
	if err != nil {
		return ContainerSpec{}, images.Plan{}, err
	}
	noNetwork, err := m.networkNone(b.project, pc)
	if err != nil {
		return ContainerSpec{}, images.Plan{}, err
	}
	display := m.cfg.Display
	if pc.Display != nil {
		display = desktop.Display(*pc.Display)
	}
	plan, err := m.planImage(b.project, pc)
	if err != nil {
		return ContainerSpec{}, images.Plan{}, err
	}
	variant, image := plan.Variant, plan.Tag
	m.commit(b, &State{
		ProjectPath: b.project, ContainerName: name, Image: image, ImageVariant: variant,
		Status: StatusStarting, Display: display, CreatedAt: m.cfg.Now().UnixMilli(),
	})
	policy, _ := m.currentPolicy()
	spec := ContainerSpec{
		Name:      name,
		Image:     image,
		Labels:    projectLabels(m.cfg.Scope, m.cfg.Owner, b.project),
		Env:       []string{fmt.Sprintf("%s=%dx%dx24", desktop.ResolutionEnv, display.Width, display.Height)},
		Ports:     m.published(),
		HostIP:    "127.0.0.1",
		Limits:    limits,
		DiskBytes: policy.DiskBytes,
		NoNetwork: noNetwork,
	}
	spec.Labels[LabelVariant] = variant
	if variant != images.VariantDesktop {
		// Chromium's own sandbox needs user namespaces (docs/browser.md, "Chromium's
		// own sandbox"); desktop sandboxes keep Docker's profile.
		spec.Seccomp = m.cfg.Seccomp
	}
	return spec, plan, nil
}

// createNamed creates the container, or finds the one another sidecar
// created under its name a moment ago.
func (m *Manager) createNamed(ctx context.Context, b *box, spec ContainerSpec) (Container, error) {
	for attempt := 1; ; attempt++ {
		id, err := m.docker.CreateContainer(ctx, spec)
		if err == nil {
			m.log.Info().Str("project", b.project).Str("container", id).Msg("created sandbox container")
			return m.docker.InspectContainer(ctx, id)
		}
		if !errors.Is(err, ErrNameConflict) {
			return Container{}, fmt.Errorf("create container: %w", err)
		}
		c, err := m.find(ctx, b)
		if !errors.Is(err, ErrContainerNotFound) {
			return c, err
		}
		if attempt == nameHeldAttempts {
			return Container{}, fmt.Errorf("%w: Docker holds the name %s for no container: try the start again", ErrNameConflict, spec.Name)
		}
		// The name is held by no container: a create Docker is still
		// rolling back (its client, a sidecar, was killed mid-request).
		m.log.Debug().Str("project", b.project).Int("attempt", attempt).Msg("the container name is held by a create being undone; trying again")
		select {
		case <-ctx.Done():
			return Container{}, ctx.Err()
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
}

// nameHeldAttempts bounds the creates tried while the container's name is
// held by no container (1.4 s of waits in all).
const nameHeldAttempts = 8

// launch starts a stopped container, or adopts a running one, and waits
// until its desktop answers.
func (m *Manager) launch(ctx context.Context, b *box, c Container, trace *startTrace) (State, error) {
	display := displayOf(c, m.cfg.Display)
	starting := m.stateOf(b.project, c, desktop.Secret{}, display, false)
	starting.Status, starting.Error = StatusStarting, ""
	m.commit(b, &starting)

	var installed desktop.Secret
	if !c.Running {
		secret, err := m.startStopped(ctx, b, c, trace)
		if err != nil {
			return State{}, err
		}
		installed = secret
	}
	return m.awaitDesktop(ctx, b, c, installed, trace)
}

// awaitDesktop waits until the running container's desktop answers, with
// its network's rules in place, and makes the sandbox running. installed
// is the passwords a start put in, if it did.
func (m *Manager) awaitDesktop(ctx context.Context, b *box, c Container, installed desktop.Secret, trace *startTrace) (State, error) {
	display := displayOf(c, m.cfg.Display)
	netUp := m.networkUp(ctx, b.project, c)
	ready, err := m.waitReady(ctx, b, c.ID, installed, trace)
	if nerr := <-netUp; err == nil {
		err = nerr
	}
	if err != nil {
		return State{}, m.failStart(ctx, b, c.ID, err)
	}
	trace.step("ready")
	r := b.runOf(ready)
	m.guardOnce(b, r, ready)
	if installed != (desktop.Secret{}) {
		b.mu.Lock()
		r.secret = installed
		b.mu.Unlock()
	}
	m.markReady(b, ready)
	secret, err := m.secretFor(ctx, b, ready)
	if err != nil {
		m.log.Warn().Err(err).Str("project", b.project).Msg("VNC password unknown; the viewer will ask for it")
	}
	st := m.stateOf(b.project, ready, secret, display, false)
	b.clearFailure()
	b.setStopReason("", "")
	m.touch(b) // a start is a use
	m.commit(b, &st)
	m.progress(b.project, StageReady, fmt.Sprintf("The desktop is ready on 127.0.0.1:%d", st.WSPort), 0, 0)
	trace.step("after")
	m.log.Info().Str("project", b.project).Int("wsPort", st.WSPort).Int("vncPort", st.VNCPort).Msg("sandbox running")
	return st, nil
}

// startStopped starts the stopped container with the project's limits and
// fresh passwords, which it returns. The passwords' file goes in before the
// desktop starts, through the archive API, so the secret never appears in
// the container's environment, command line or labels.
func (m *Manager) startStopped(ctx context.Context, b *box, c Container, trace *startTrace) (desktop.Secret, error) {
	secret, err := desktop.NewSecret()
	if err != nil {
		m.settle(ctx, b)
		return desktop.Secret{}, err
	}
	if err := m.applyLimits(ctx, b, c); err != nil {
		m.settle(ctx, b)
		return desktop.Secret{}, err
	}
	trace.step("limits")
	dir, legacy := passwdDir(c)
	_, gid := desktopUserOf(c)
	if err := m.docker.CopyTo(ctx, c.ID, dir, desktop.PasswdArchive(secret, legacy, gid)); err != nil {
		m.settle(ctx, b)
		return desktop.Secret{}, fmt.Errorf("install VNC password: %w", err)
	}
	trace.step("password")
	m.progress(b.project, StageStart, "Starting the desktop", 0, 0)
	if err := m.startContainer(ctx, b, c.ID); err != nil {
		return desktop.Secret{}, m.failStart(ctx, b, c.ID, err)
	}
	trace.step("engine")
	return secret, nil
}

// portAttempts bounds the starts of a container whose ports the engine
// could not publish. Each one moves on: Docker picks the next free ports
// (and tries ten itself before it gives up).
const portAttempts = 5

// startContainer starts the container, again when a port Docker chose was
// taken by something else on the host (it checks its own allocations, not
// other programs'), or it refused the port.
func (m *Manager) startContainer(ctx context.Context, b *box, id string) error {
	for attempt := 1; ; attempt++ {
		err := m.docker.StartContainer(ctx, id)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, ErrPortInUse):
			return fmt.Errorf("start container: %w", err)
		case attempt == portAttempts:
			return fmt.Errorf("start container: the host ports Docker chose were taken %d times in a row; "+
				"something on this machine holds many ports from 32768 up: %w", attempt, err)
		}
		m.log.Warn().Err(err).Str("project", b.project).Int("attempt", attempt).Msg("a host port Docker chose is taken; starting again")
		m.progress(b.project, StageStart, fmt.Sprintf("A host port Docker chose was taken; starting again (attempt %d of %d)", attempt+1, portAttempts), 0, 0)
	}
}

// waitReady waits until the container's desktop answers (readiness.Wait),
// probed with secret, the passwords the start installed, or else those
// read from the container.
func (m *Manager) waitReady(ctx context.Context, b *box, id string, secret desktop.Secret, trace *startTrace) (Container, error) {
	c, err := readiness.Wait(ctx, startingDesktop{m: m, b: b, id: id, secret: secret, trace: trace}, m.cfg.ReadyTimeout)
	if err == nil && c.Paused() {
		// A desktop that answers is not frozen. Just after an unpause,
		// Docker 20.10 may still say paused for a moment: the pause's own
		// event from containerd, handled late, marks it paused again until
		// the resume's event follows (seen here in 1 resume of 3 with
		// execs starting beside it).
		c.State = "running"
	}
	return c, err
}

// startingDesktop is a container's desktop as readiness.Wait looks at it.
type startingDesktop struct {
	m      *Manager
	b      *box
	id     string
	secret desktop.Secret
	trace  *startTrace
}

// Look inspects the container and, while it runs, finds its desktop's
// host ports: read each time, as they change on every start.
func (d startingDesktop) Look(ctx context.Context) (Container, readiness.Look, error) {
	c, err := d.m.docker.InspectContainer(ctx, d.id)
	if err != nil || !c.Running {
		return c, readiness.Look{ExitCode: c.ExitCode}, err
	}
	c, noPort := d.m.withDesktopPorts(ctx, d.b.project, c)
	return c, readiness.Look{Running: true, WSPort: c.Ports[desktop.NoVNCPort], NoPort: noPort}, nil
}

func (d startingDesktop) Probe(ctx context.Context, c Container, ws int) error {
	d.trace.probed()
	return d.m.probe(ctx, d.b, c, ws, d.secret)
}

// failStart records a start that did not work: the container's last output
// goes into the error, the container is stopped so that a half-started
// desktop does not linger, and the state says what went wrong.
func (m *Manager) failStart(ctx context.Context, b *box, id string, cause error) error {
	if errors.Is(cause, ErrDockerUnavailable) || errors.Is(cause, context.Canceled) {
		m.settle(ctx, b)
		return cause
	}
	logs, _ := m.docker.Logs(ctx, id, startLogLines)
	if err := m.docker.StopContainer(ctx, id, m.cfg.StopGrace); err != nil {
		m.log.Warn().Err(err).Str("container", id).Msg("could not stop a sandbox that failed to start")
	}
	serr := NewStartError(logs, cause)
	b.mu.Lock()
	b.failed.id, b.failed.why = id, serr.Error()
	b.mu.Unlock()
	m.log.Error().Err(serr).Str("project", b.project).Strs("log", logs).Msg("sandbox did not start")
	m.settle(ctx, b)
	return serr
}

// startTrace notes how long each step of a start took, for the debug log:
// where a start's time goes on the user's own machine (docs/performance.md,
// A start), as BenchmarkStart's trace shows it for the benchmark. A nil
// trace notes nothing.
type startTrace struct {
	last   time.Time
	steps  strings.Builder
	probes int
}

func newStartTrace() *startTrace { return &startTrace{last: time.Now()} }

// step ends a step of the start, named for what it did.
func (t *startTrace) step(name string) {
	if t == nil {
		return
	}
	now := time.Now()
	if t.steps.Len() > 0 {
		t.steps.WriteByte(' ')
	}
	t.steps.WriteString(name)
	t.steps.WriteByte('=')
	t.steps.WriteString(strconv.FormatFloat(float64(now.Sub(t.last).Microseconds())/1000, 'f', 1, 64))
	t.steps.WriteString("ms")
	t.last = now
}

// probed counts a probe of the desktop.
func (t *startTrace) probed() {
	if t != nil {
		t.probes++
	}
}
