package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/disklimit"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// The lifecycle policy is the user's own config.json (projectfs.UserConfig):
// a sandbox idle for idleStop is stopped, no more than maxRunning run at
// once, and one whose files outgrow disk is warned, then stopped. Run
// applies it every round (what it measures of a sandbox's use is in
// usage.go); Start applies maxRunning (admit, below).
//
// The file is read again whenever it changes. One with a key that cannot
// be used is reported (the log, and a sandbox/warning without a project),
// the keys at fault keep their defaults, and until it is fixed the policy
// stops no sandbox: a slip in the file must not take a desktop from under
// its user.

// PolicyConfig is where a Manager's lifecycle policy comes from.
type PolicyConfig struct {
	// File is the user's config.json (projectfs.UserConfigFile), read
	// again when it changes. Empty: no policy is enforced (library use
	// and tests).
	File string
	// MinIdleStop is the shortest idleStop the file may set
	// (projectfs.MinIdleStop); tests lower it.
	MinIdleStop time.Duration
	// Interval is how often the policy looks at the running sandboxes:
	// their use, viewers and disk (30 s; sooner when idleStop is short).
	Interval time.Duration
	// DiskTimeout bounds one measure of a sandbox's files (10 s; disklimit.DefaultTimeout).
	DiskTimeout time.Duration
}

// policy is the user's lifecycle policy as the manager applies it.
type policy struct {
	file        string // "" enforces nothing
	minIdle     time.Duration
	interval    time.Duration
	diskTimeout time.Duration
	activity    projectfs.Activity

	mu       sync.Mutex // guards the fields below
	loaded   bool
	stamp    fileStamp
	cfg      projectfs.UserConfig
	err      error  // what is wrong with the file, or nil
	reported string // the problem last reported, "" for none

	admitMu sync.Mutex      // serializes admissions (admit)
	pending map[string]bool // projects admitted whose start is under way; guarded by admitMu
}

// fileStamp tells a changed file from the one read before.
type fileStamp struct {
	exists bool
	mod    time.Time
	size   int64
}

func newPolicy(cfg PolicyConfig, stateDir string) *policy {
	p := &policy{
		file:        cfg.File,
		minIdle:     cfg.MinIdleStop,
		interval:    cfg.Interval,
		diskTimeout: cmp.Or(cfg.DiskTimeout, disklimit.DefaultTimeout),
		activity:    projectfs.NewActivity(stateDir),
		pending:     map[string]bool{},
	}
	if p.minIdle == 0 {
		p.minIdle = projectfs.MinIdleStop
	}
	if p.interval == 0 {
		p.interval = 30 * time.Second
	}
	return p
}

// noPolicy is what a manager without a policy file applies: nothing, with
// the default caps.
func noPolicy() projectfs.UserConfig {
	return projectfs.UserConfig{Caps: projectfs.DefaultUserConfig().Caps}
}

// Policy is the lifecycle policy in force, the file it comes from ("" for
// none) and what is wrong with that file, if anything (a
// *projectfs.UserConfigError).
func (m *Manager) Policy() (projectfs.UserConfig, string, error) {
	cfg, err := m.currentPolicy()
	return cfg, m.policy.file, err
}

// currentPolicy reads the file again if it changed since, and reports a
// new problem with it, or that it was fixed.
func (m *Manager) currentPolicy() (projectfs.UserConfig, error) {
	p := m.policy
	if p.file == "" {
		return noPolicy(), nil
	}
	stamp := stampOf(p.file)
	p.mu.Lock()
	if !p.loaded || stamp != p.stamp {
		p.cfg, p.err = projectfs.ReadUserConfig(p.file, p.minIdle)
		p.stamp, p.loaded = stamp, true
	}
	cfg, err := p.cfg, p.err
	news := problemText(err) != p.reported
	p.reported = problemText(err)
	p.mu.Unlock()
	if news {
		m.reportPolicy(cfg, err)
	}
	return cfg, err
}

func stampOf(path string) fileStamp {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, mod: info.ModTime(), size: info.Size()}
}

func problemText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// policySuspended is what a bad file means until it is fixed.
const policySuspended = "until it is fixed, the keys at fault keep their defaults and no sandbox is stopped for idleness or disk use"

// reportPolicy says what the policy file holds: in the log, and, when it
// is wrong, as a warning to clients.
func (m *Manager) reportPolicy(cfg projectfs.UserConfig, err error) {
	if err == nil {
		m.log.Info().Str("file", m.policy.file).Str("policy", cfg.String()).Msg("lifecycle policy")
		return
	}
	msg := err.Error() + "; " + policySuspended
	m.log.Warn().Str("file", m.policy.file).Str("policy", cfg.String()).Msg(msg)
	problem := projectfs.FileCorrupt
	var ue *projectfs.UserConfigError
	if errors.As(err, &ue) && ue.Unreadable {
		problem = projectfs.FileUnreadable
	}
	m.events.publish(Event{Kind: EventWarning, Warning: Warning{File: m.policy.file, Problem: problem, Message: msg}})
}

// enforcePolicy applies the policy to every running sandbox each
// interval (sooner when idleStop is short), from the end of the
// first reconciliation until ctx ends.
func (m *Manager) enforcePolicy(ctx context.Context) {
	if m.policy.file == "" {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-m.reconciled:
	}
	for {
		wait := m.policyRound(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// policyRound applies the policy once to every sandbox, and says when to
// do so again.
func (m *Manager) policyRound(ctx context.Context) time.Duration {
	cfg, err := m.currentPolicy()
	for _, b := range m.allBoxes() {
		m.applyPolicy(ctx, b, cfg, err == nil)
	}
	return m.policy.wait(cfg)
}

// wait is the time between two rounds: an idle sandbox is stopped
// at most a quarter of idleStop late.
func (p *policy) wait(cfg projectfs.UserConfig) time.Duration {
	wait := p.interval
	if cfg.IdleStop > 0 {
		wait = min(wait, max(cfg.IdleStop/4, 100*time.Millisecond))
	}
	return wait
}

// applyPolicy looks at one sandbox: its disk, then its activity. stops
// says whether the policy may stop it.
func (m *Manager) applyPolicy(ctx context.Context, b *box, cfg projectfs.UserConfig, stops bool) {
	st := b.snapshot()
	if st != nil && st.Status == StatusPaused && cfg.IdleStop > 0 && stops {
		m.checkPaused(ctx, b, *st, cfg.IdleStop)
		return
	}
	if st == nil || st.Status != StatusRunning {
		return
	}
	r := b.currentRun(st.ContainerID)
	if r == nil {
		return
	}
	if cfg.DiskBytes > 0 && m.checkDisk(ctx, b, r, *st, cfg.DiskBytes, stops) {
		return
	}
	if cfg.IdleStop > 0 && stops {
		m.checkIdle(ctx, b, r, *st, cfg.IdleStop)
	}
}

// policyStop stops a running sandbox for the policy, saying why in its
// state, unless an operation holds the project (the next round looks
// again), the container is no longer the one that was looked at, or
// still says the reason no longer holds.
func (m *Manager) policyStop(ctx context.Context, b *box, id, why string, still func() bool) {
	if !m.tryLockProject(b) {
		return
	}
	defer m.unlockProject(b)
	if !m.mayWrite(b) {
		return // another process works on the project
	}
	if st := b.snapshot(); st == nil || st.ContainerID != id || (st.Status != StatusRunning && st.Status != StatusPaused) || !still() {
		return
	}
	b.setStopReason(id, why)
	if _, err := m.stop(ctx, b); err != nil {
		m.log.Warn().Err(err).Str("project", b.project).Str("why", why).Msg("could not stop the sandbox for the lifecycle policy")
		return
	}
	m.log.Info().Str("project", b.project).Str("container", id).Msg(why)
}

// stopReason is why the policy stopped a container: id is the container
// the reason is for, read the last one whose .pilot/sandbox.json was
// consulted for it (a reason saved by another process). Guarded by the
// box's mu.
type stopReason struct {
	id, why string
	read    string
}

func (b *box) setStopReason(id, why string) {
	b.mu.Lock()
	b.stopReason = stopReason{id: id, why: why}
	b.mu.Unlock()
}

// stopReasonOf is why the policy stopped the container, if it did: known
// here, or saved in .pilot/sandbox.json by the process that stopped it
// (the record counts only if written after the container ended). A
// running container has none.
func (b *box) stopReasonOf(c Container) string {
	b.mu.Lock()
	sr := b.stopReason
	if c.Running {
		b.stopReason = stopReason{}
	}
	b.mu.Unlock()
	switch {
	case c.Running:
		return ""
	case sr.id == c.ID:
		return sr.why
	case sr.read == c.ID:
		return ""
	}
	why := ""
	rec, err := projectfs.ReadRecord(b.project)
	if err == nil && rec != nil && rec.ContainerID == c.ID && rec.UpdatedAt >= c.FinishedAt.UnixMilli() {
		why = rec.StopReason
	}
	b.mu.Lock()
	b.stopReason = stopReason{read: c.ID}
	if why != "" {
		b.stopReason.id, b.stopReason.why = c.ID, why
	}
	b.mu.Unlock()
	return why
}

// ErrTooManySandboxes: a start would run more sandboxes than the policy's
// maxRunning. See TooManyError.
var ErrTooManySandboxes = errors.New("too many sandboxes running")

// RunningSandbox names a sandbox that counts against maxRunning, so that
// the user can pick one to stop.
type RunningSandbox struct {
	ProjectPath   string `json:"projectPath"`
	ContainerID   string `json:"containerId,omitempty"`
	ContainerName string `json:"containerName"`
}

// TooManyError is ErrTooManySandboxes with the sandboxes that run.
type TooManyError struct {
	Max     int
	Running []RunningSandbox
}

func (e *TooManyError) Error() string {
	projects := make([]string, len(e.Running))
	for i, r := range e.Running {
		projects[i] = r.ProjectPath
	}
	running := fmt.Sprintf("%d sandboxes already run", len(e.Running))
	if len(e.Running) == 1 {
		running = "1 sandbox already runs"
	}
	return fmt.Sprintf("%s, as many as maxRunning in config.json allows: stop one first (%s)", running, strings.Join(projects, ", "))
}

func (e *TooManyError) Unwrap() error { return ErrTooManySandboxes }

// admit lets a start of the project's stopped or missing sandbox go ahead
// if fewer than maxRunning others run (in Docker, or being started by this
// process), and counts it as running until release is called. Starts by
// other processes of the user between their admission and the engine's
// start are not seen: two at that very moment may both get in.
func (m *Manager) admit(ctx context.Context, b *box) (release func(), err error) {
	cfg, _ := m.currentPolicy()
	if cfg.MaxRunning == 0 {
		return func() {}, nil
	}
	p := m.policy
	p.admitMu.Lock()
	defer p.admitMu.Unlock()
	running, err := m.runningOthers(ctx, b.project)
	if err != nil {
		return nil, err
	}
	if len(running) >= cfg.MaxRunning {
		return nil, &TooManyError{Max: cfg.MaxRunning, Running: running}
	}
	p.pending[b.project] = true
	return func() {
		p.admitMu.Lock()
		delete(p.pending, b.project)
		p.admitMu.Unlock()
	}, nil
}

// runningOthers lists the sandboxes of other projects that run, or that
// this process is starting; the caller holds admitMu.
func (m *Manager) runningOthers(ctx context.Context, project string) ([]RunningSandbox, error) {
	containers, err := m.docker.ListContainers(ctx, scopeLabels(m.cfg.Scope))
	if err != nil {
		return nil, err
	}
	var out []RunningSandbox
	seen := map[string]bool{}
	for _, c := range containers {
		p, mine := m.projectOf(c)
		if !c.Running || !mine || p == project {
			continue
		}
		seen[p] = true
		out = append(out, RunningSandbox{ProjectPath: p, ContainerID: c.ID, ContainerName: c.Name})
	}
	for p := range m.policy.pending {
		if p != project && !seen[p] {
			out = append(out, RunningSandbox{ProjectPath: p, ContainerName: m.containerName(p)})
		}
	}
	slices.SortFunc(out, func(a, b RunningSandbox) int { return strings.Compare(a.ProjectPath, b.ProjectPath) })
	return out, nil
}
