package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	units "github.com/docker/go-units"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/disklimit"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// What the lifecycle policy (policy.go) measures of a sandbox's use, and
// what bounds it: its activity and viewers (idleStop), and its resource
// limits, and its files (the arithmetic of the disk limit is
// disklimit's; the decision to stop is here).

// A running sandbox is in use while the agent or the user works with it:
// a tool call, an exec, a file call (each calls Touch, or goes through
// running, which does), or a viewer connected to its desktop. One that
// nothing used for idleStop is stopped and kept.
//
// Calls are counted as they come, at no cost. Viewers are looked for only
// once a sandbox has had no call for idleStop, with one exec in it (its
// /proc/net/tcp), and then every tenth of idleStop while one stays
// connected: that exec is the idle check's only real cost (about 1.5 ms
// of the sidecar's CPU and 55 ms of the engine's, measured with
// BenchmarkPolicyRound), and a sandbox the agent is using never pays it.

// shareEvery is how often a sandbox's use is written down for the user's
// other processes (projectfs.Activity): often enough for idleStop's
// minute, seldom enough to cost nothing.
const shareEvery = 5 * time.Second

// Touch records a use of the project's sandbox: the RPC server calls it
// for every tool call. A path that names no project is ignored.
func (m *Manager) Touch(path string) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return
	}
	m.touch(m.box(project))
}

// touch records a use of the box's current run, and, now and then, for
// the user's other processes too.
func (m *Manager) touch(b *box) {
	now := m.cfg.Now()
	b.mu.Lock()
	r := b.run
	share := false
	if r != nil {
		r.lastActive = now
		share = now.Sub(r.sharedAt) >= shareEvery
		if share {
			r.sharedAt = now
		}
	}
	b.mu.Unlock()
	if share {
		if err := m.policy.activity.Touch(b.project, now); err != nil {
			m.log.Debug().Err(err).Str("project", b.project).Msg("could not mark the sandbox's use for other processes")
		}
	}
}

// lastUse is the last use of the run any process saw; a run the policy
// had not seen before counts as used now.
func (m *Manager) lastUse(b *box, r *run, now time.Time) time.Time {
	b.mu.Lock()
	if r.lastActive.IsZero() {
		r.lastActive = now
	}
	last := r.lastActive
	b.mu.Unlock()
	if shared := m.policy.activity.Last(b.project); shared.After(last) {
		last = shared
	}
	return last
}

// checkIdle stops the sandbox if nothing used it for idle and no viewer
// is connected. Once a viewer was seen, it looks again every tenth of
// idle until the viewer has gone, so that idleStop counts from about
// when it left (at most a tenth and a round early).
func (m *Manager) checkIdle(ctx context.Context, b *box, r *run, st State, idle time.Duration) {
	now := m.cfg.Now()
	unused := now.Sub(m.lastUse(b, r, now))
	b.mu.Lock()
	viewing, lookedAt := r.viewing, r.viewersAt
	b.mu.Unlock()
	switch {
	case viewing && now.Sub(lookedAt) < idle/10:
		return // watched a moment ago
	case !viewing && unused < idle:
		return
	}
	viewers, err := m.viewers(ctx, st.ContainerID)
	if err != nil {
		m.log.Debug().Err(err).Str("project", b.project).Msg("could not look for viewers; not stopping the sandbox this time")
		return
	}
	b.mu.Lock()
	r.viewing, r.viewersAt = viewers > 0, now
	if r.viewing {
		r.lastActive = now
	}
	b.mu.Unlock()
	if viewers > 0 || unused < idle {
		return
	}
	why := "stopped after " + projectfs.FormatDuration(idle) + " without activity"
	m.policyStop(ctx, b, st.ContainerID, why, func() bool {
		// A call may have come while the viewers were looked for.
		return m.cfg.Now().Sub(m.lastUse(b, r, now)) >= idle
	})
}

// viewerTimeout bounds the look for viewers.
const viewerTimeout = 10 * time.Second

// viewers counts the connections to the sandbox's VNC server and
// websockify, from inside it: the only view that is right whatever the
// engine (a remote one, Docker Desktop's virtual machine) and its
// port publishing (docker-proxy or not).
func (m *Manager) viewers(ctx context.Context, id string) (int, error) {
	res, err := m.docker.Exec(ctx, id, ExecSpec{Cmd: desktop.ViewerCommand, User: desktop.User, Timeout: viewerTimeout})
	if err != nil {
		return 0, err
	}
	return desktop.ViewerConnections(res.Stdout), nil
}

// A sandbox's memory, CPUs, processes and /dev/shm are the defaults
// (Config.Limits) replaced by the project's settings, within what the
// engine has; settings above the user's caps wait for the user's approval
// (project.go). A stopped sandbox takes changed limits at its next start.

// projectLimits reads the project's sandbox settings and the engine's
// capacity, and returns the settings with the container limits they make.
// A settings file that is refused (a link, say) counts as absent, and is
// reported.
func (m *Manager) projectLimits(ctx context.Context, b *box) (projectfs.Config, Limits, error) {
	project := b.project
	pc, err := projectfs.ReadConfig(project)
	var fe *projectfs.FileError
	if errors.Is(err, projectfs.ErrRefused) && errors.As(err, &fe) {
		fe.Effect = "the sandbox gets the default settings"
		m.warn(b, fe.Path, fe)
		err = nil
	}
	if err != nil {
		return pc, Limits{}, err
	}
	if ask, ok := limitsAsk(pc, m.caps()); ok {
		if err := m.require(project, ask); err != nil {
			return pc, Limits{}, err
		}
	}
	if err := m.checkNetwork(project, pc); err != nil {
		return pc, Limits{}, err
	}
	capacity, err := m.docker.Capacity(ctx)
	if err != nil {
		return pc, Limits{}, err
	}
	limits, err := limitsFor(pc, m.cfg.Limits, capacity, projectfs.SettingsFile(project))
	return pc, limits, err
}

// applyLimits brings a stopped container's memory, CPU and process limits
// in line with the project's settings before it starts, so that a change
// needs only a restart. A settings file that cannot be read leaves the
// container as it is (and is reported); a setting that is wrong fails the
// start, as it would a creation.
func (m *Manager) applyLimits(ctx context.Context, b *box, c Container) error {
	pc, want, err := m.projectLimits(ctx, b)
	var fe *projectfs.FileError
	switch {
	case errors.As(err, &fe):
		fe.Effect = "the sandbox starts with the limits it had"
		m.warn(b, fe.Path, fe)
		return nil
	case err != nil:
		return err
	}
	if err := m.checkMadeNetwork(b, pc, c); err != nil {
		return err
	}
	m.noteCreationOnly(b, pc, c)
	m.noteImageChange(ctx, b, pc, c)
	want.ShmBytes = c.Limits.ShmBytes // fixed at creation
	if want == c.Limits {
		return nil
	}
	if err := m.docker.UpdateLimits(ctx, c.ID, want); err != nil {
		return fmt.Errorf("apply the project's limits (%s): %w", describeLimits(want), err)
	}
	m.log.Info().Str("project", b.project).Str("limits", describeLimits(want)).Msg("applied the project's limits")
	m.progress(b.project, StageStart, "Applied the project's limits: "+describeLimits(want), 0, 0)
	return nil
}

// noteCreationOnly says, in the start's progress, which settings the
// container cannot take without being made anew.
func (m *Manager) noteCreationOnly(b *box, pc projectfs.Config, c Container) {
	const how = "; remove the sandbox (its files go with it) to make one with it"
	if pc.Display != nil && desktop.Display(*pc.Display) != displayOf(c, m.cfg.Display) {
		have := displayOf(c, m.cfg.Display)
		m.progress(b.project, StageStart, fmt.Sprintf("The display size in settings.json (%dx%d) applies to a new sandbox: this one keeps %dx%d%s",
			pc.Display.Width, pc.Display.Height, have.Width, have.Height, how), 0, 0)
	}
	if pc.ShmSize != nil && c.Limits.ShmBytes > 0 {
		if n, _ := projectfs.ParseSize(*pc.ShmSize); n != c.Limits.ShmBytes {
			m.progress(b.project, StageStart, fmt.Sprintf("The shmSize in settings.json (%s) applies to a new sandbox: this one keeps %s%s",
				*pc.ShmSize, units.BytesSize(float64(c.Limits.ShmBytes)), how), 0, 0)
		}
	}
}

// noteImageChange says, in the start's progress, when the project's
// Dockerfile (or its context) changed since its sandbox was made: the
// image applies to a new sandbox, as every sandbox.image does. A
// container on the agent CLIs' layer has that layer's image, which keeps
// the project image's labels (images.LabelContext among them).
func (m *Manager) noteImageChange(ctx context.Context, b *box, pc projectfs.Config, c Container) {
	df := pc.ImageDockerfile()
	own := c.Image == m.ownImage(b.project).Tag || c.Labels[LabelVariant] == images.VariantProject
	if df == "" || !own || !m.images.ContextChanged(ctx, c.Image, b.project, df) {
		return
	}
	m.progress(b.project, StageStart, fmt.Sprintf("%s changed since this sandbox was made: it applies to a new sandbox; "+
		"remove the sandbox (its files go with it) to build and use it", df), 0, 0)
}

// limits are the container limits for the project: defaults, replaced by
// its settings, within what the engine has. A default the engine cannot
// give (2 CPUs on a one-CPU engine) is lowered to what it has; a setting
// it cannot give is a projectfs.ConfigError.
func limitsFor(c projectfs.Config, defaults Limits, capacity Capacity, file string) (Limits, error) {
	l := defaults
	if capacity.CPUs > 0 && l.NanoCPUs > int64(capacity.CPUs)*1e9 {
		l.NanoCPUs = int64(capacity.CPUs) * 1e9
	}
	if c.Memory != nil {
		l.MemoryBytes, _ = projectfs.ParseSize(*c.Memory) // checked when read
		if capacity.MemoryBytes > 0 && l.MemoryBytes > capacity.MemoryBytes {
			return l, &projectfs.ConfigError{File: file, Field: "sandbox.memory",
				Reason: fmt.Sprintf("is %s, more than the Docker engine's %s", *c.Memory, units.BytesSize(float64(capacity.MemoryBytes)))}
		}
	}
	if c.CPUs != nil {
		l.NanoCPUs = int64(*c.CPUs * 1e9)
		if capacity.CPUs > 0 && *c.CPUs > float64(capacity.CPUs) {
			return l, &projectfs.ConfigError{File: file, Field: "sandbox.cpus",
				Reason: fmt.Sprintf("is %g, more than the Docker engine's %d", *c.CPUs, capacity.CPUs)}
		}
	}
	if c.Processes != nil {
		l.PidsLimit = *c.Processes
	}
	if c.ShmSize != nil {
		l.ShmBytes, _ = projectfs.ParseSize(*c.ShmSize)
	}
	if l.ShmBytes > l.MemoryBytes {
		// /dev/shm's pages count against the memory limit: a larger one
		// would promise what the sandbox cannot have.
		return l, &projectfs.ConfigError{File: file, Field: "sandbox.shmSize",
			Reason: fmt.Sprintf("is %s, more than the sandbox's memory (%s)", units.BytesSize(float64(l.ShmBytes)), units.BytesSize(float64(l.MemoryBytes)))}
	}
	return l, nil
}

// describeLimits is how logs and messages put a set of limits.
func describeLimits(l Limits) string {
	return fmt.Sprintf("memory %s, CPUs %s, processes %d, /dev/shm %s",
		units.BytesSize(float64(l.MemoryBytes)), strconv.FormatFloat(float64(l.NanoCPUs)/1e9, 'g', 3, 64),
		l.PidsLimit, units.BytesSize(float64(l.ShmBytes)))
}

// ProblemDisk is the problem of a Warning about a sandbox's disk use: it
// names no file.
const ProblemDisk = "disk"

// checkDisk measures the sandbox's files, warns at disklimit.WarnAt of
// limit and stops it past its allowance (when stops allows). A measure
// that takes longer than the policy's diskTimeout is given up; if the last
// one was near the allowance, the sandbox is stopped too: whatever makes
// its layer slow to walk must not hide it growing past its limit. It says
// whether it stopped.
func (m *Manager) checkDisk(ctx context.Context, b *box, r *run, st State, limit int64, stops bool) bool {
	if !m.diskDue(b, r) {
		return false
	}
	started := m.cfg.Now()
	measureCtx, cancel := context.WithTimeout(ctx, m.policy.diskTimeout)
	used, err := m.docker.DiskUsage(measureCtx, st.ContainerID)
	timedOut := errors.Is(measureCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if err != nil {
		m.spaceDisk(b, r, started)
		m.log.Debug().Err(err).Str("project", b.project).Msg("could not measure the sandbox's files")
		b.mu.Lock()
		last, near := r.disk.Near(b.disk, st.ContainerID, limit)
		b.mu.Unlock()
		if !timedOut || !near || !stops {
			return false
		}
		return m.stopForDisk(ctx, b, st, disklimit.Unmeasured(m.policy.diskTimeout, last, limit))
	}
	warn, allowance := b.noteDisk(r, st.ContainerID, used, limit)
	m.spaceDisk(b, r, started)
	if warn {
		m.warnDisk(b, used, limit, allowance)
	}
	if used <= allowance || !stops {
		return false
	}
	return m.stopForDisk(ctx, b, st, disklimit.Past(used, limit))
}

// stopForDisk stops the sandbox, saying why, and says whether it stopped.
func (m *Manager) stopForDisk(ctx context.Context, b *box, st State, why string) bool {
	m.policyStop(ctx, b, st.ContainerID, why, func() bool { return true })
	now := b.snapshot()
	return now != nil && now.Status == StatusStopped
}

// diskDue says whether the run's layer is to be measured this round.
func (m *Manager) diskDue(b *box, r *run) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return r.disk.Due(m.cfg.Now())
}

// spaceDisk puts off the next measure of a layer that was slow to measure
// (disklimit.Run.Space).
func (m *Manager) spaceDisk(b *box, r *run, started time.Time) {
	now := m.cfg.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	r.disk.Space(started, now)
}

// noteDisk keeps the measure, in the box and its state, and says whether
// to warn and how far the run may grow (disklimit.Run.Note).
func (b *box) noteDisk(r *run, id string, used, limit int64) (warn bool, allowance int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	warn, allowance = r.disk.Note(&b.disk, id, used, limit)
	if b.state != nil && b.state.ContainerID == id {
		b.state.DiskBytes = used
	}
	return warn, allowance
}

// warnDisk tells the user, and the log, how much of its disk limit the
// sandbox's files take.
func (m *Manager) warnDisk(b *box, used, limit, allowance int64) {
	msg := disklimit.Warning(used, limit, allowance)
	m.log.Warn().Str("project", b.project).Int64("diskBytes", used).Int64("limit", limit).Msg(msg)
	m.events.publish(Event{Kind: EventWarning, Project: b.project, Warning: Warning{
		ProjectPath: b.project, Problem: ProblemDisk, Message: msg,
	}})
}
