package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/disklimit"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Each project the manager meets has a box: its operation lock, its state
// and what is learned of its container's runs. Every change of its state
// goes through commit, which announces it and keeps .pilot/sandbox.json in
// step.

// box is one project's sandbox as the manager knows it.
type box struct {
	project string
	// op holds a token while a mutation (start, stop, remove, refresh) runs on
	// the project: mutations of one project are serialized.
	op chan struct{}
	// flock is the project's lock file while this process holds it
	// (lockProject), and lockless says it could not be made, so this
	// process works on the project with its own lock only. Only the holder
	// of the op token touches them.
	flock    *projectfs.Lock
	lockless bool
	// settingsMu serializes writes of .pilot/settings.json, which must not
	// wait for a start.
	settingsMu sync.Mutex

	mu    sync.Mutex // guards the fields below, and those of run
	state *State     // nil: the project has no sandbox
	run   *run       // the current run of its container, once seen running
	// failed is the container whose last start failed, and why: a stopped
	// container that stays an error until it starts or is stopped.
	failed struct{ id, why string }
	// term is the last SIGTERM Docker reported sending the container from
	// outside (docker stop): it is stopping until it dies.
	term struct {
		id string
		at time.Time
	}
	reported map[string]string // file -> the problem last reported with it
	// stopReason says why the policy stopped a container (usage.go), and
	// disk what its layer measured last (usage.go).
	stopReason stopReason
	disk       disklimit.Last
	paused     pauseMark // its container's current pause (stop.go)
}

func (b *box) lock(ctx context.Context) error {
	select {
	case b.op <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *box) tryLock() bool {
	select {
	case b.op <- struct{}{}:
		return true
	default:
		return false
	}
}

func (b *box) unlock() { <-b.op }

func (b *box) snapshot() *State {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == nil {
		return nil
	}
	st := *b.state
	return &st
}

// box returns the project's box, creating it on first use.
func (m *Manager) box(project string) *box {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[project]
	if !ok {
		b = &box{project: project, op: make(chan struct{}, 1)}
		m.boxes[project] = b
	}
	return b
}

func (m *Manager) allBoxes() []*box {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*box, 0, len(m.boxes))
	for _, b := range m.boxes {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *box) int {
		switch {
		case a.project < b.project:
			return -1
		case a.project > b.project:
			return 1
		}
		return 0
	})
	return out
}

// A process takes the project's lock file (projectfs.Locks) for every change
// it makes (start, stop, remove, and the writes of .pilot/sandbox.json), so
// that a second start finds the sandbox running and reads its passwords
// back, rather than installing passwords of its own over the first one's.
// A process that only looks (a status, a resync) while another holds the
// lock reads Docker but writes nothing.

// lockWait is how often a process waiting for another's lock tries again.
const lockWait = 100 * time.Millisecond

// lockProject resolves path and takes the project's operation lock: this
// process's, then the other processes'. It waits for both as long as ctx
// lets it; while another process holds the project, this process's lock is
// let go between tries, so that a status here can still look at Docker.
func (m *Manager) lockProject(ctx context.Context, path string) (*box, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, err
	}
	return m.lockBox(ctx, project)
}

// lockBox is lockProject for a project path already canonical.
func (m *Manager) lockBox(ctx context.Context, project string) (*box, error) {
	b := m.box(project)
	announced, started := false, time.Now()
	for {
		if err := b.lock(ctx); err != nil {
			return nil, err
		}
		m.tryLockFile(b)
		if m.mayWrite(b) {
			return b, nil
		}
		b.unlock()
		if !announced && time.Since(started) > time.Second {
			m.progress(b.project, StageStart, "Waiting for another pilot-sandbox process working on this sandbox ("+
				m.locks.Holder(b.project)+")", 0, 0)
			announced = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for another pilot-sandbox process working on this sandbox: %w", ctx.Err())
		case <-time.After(lockWait):
		}
	}
}

// tryLockProject takes the project's operation lock if no one in this
// process holds it, and the other processes' lock if it is free: without
// it the holder may look at Docker but not write the project's files.
func (m *Manager) tryLockProject(b *box) bool {
	if !b.tryLock() {
		return false
	}
	m.tryLockFile(b)
	return true
}

func (m *Manager) unlockProject(b *box) {
	if b.flock != nil {
		b.flock.Release()
		b.flock = nil
	}
	b.lockless = false
	b.unlock()
}

// mayWrite says whether the holder of the project's operation lock may
// write its files: no other process is working on the project, or there is
// no way to know.
func (m *Manager) mayWrite(b *box) bool { return b.flock != nil || b.lockless || !m.locks.Enabled() }

// tryLockFile takes the project's lock file if it is free, setting b.flock.
// A lock file that cannot be made (a read-only state directory) must not
// stop the sidecar: the process then goes on with its own lock alone
// (b.lockless), and says so in the log.
func (m *Manager) tryLockFile(b *box) {
	if !m.locks.Enabled() {
		return
	}
	lock, err := m.locks.TryLock(b.project)
	if err != nil {
		m.log.Warn().Err(err).Str("project", b.project).Msg("no project lock file: other pilot-sandbox processes of this user may not wait for this one")
		b.lockless = true
		return
	}
	b.flock = lock // nil when another process holds it
}

// commit makes st the project's state: it announces a change and saves
// .pilot/sandbox.json when the change is one a restarted sidecar must know.
func (m *Manager) commit(b *box, st *State) {
	b.mu.Lock()
	prev := b.state
	if st != nil {
		st.DiskBytes = b.disk.Of(st.ContainerID)
		cp := *st
		b.state = &cp
	} else {
		b.state = nil
	}
	b.mu.Unlock()
	if prev != nil && (st == nil || st.Status == StatusStopped) {
		m.networkDown(prev.ContainerID) // a stopped sandbox has no network to carry
	}
	if sameState(prev, st) {
		return
	}
	m.persist(b, prev, st)
	// Subscribers get their own copy: st stays the caller's.
	var published *State
	if st != nil {
		cp := *st
		published = &cp
	}
	if dropped := m.events.publish(Event{Kind: EventState, Project: b.project, State: published}); dropped > 0 {
		m.log.Warn().Int("subscribers", dropped).Msg("event dropped for subscribers that stopped reading")
	}
}

// progress announces a step of a long operation.
func (m *Manager) progress(project, stage, msg string, current, total int) {
	m.events.publish(Event{Kind: EventProgress, Project: project, Progress: Progress{
		ProjectPath: project, Stage: stage, Message: msg, Current: current, Total: total,
	}})
}

// persist keeps .pilot/sandbox.json in step with settled states; the
// transitional ones (starting, stopping) are not written. A file that
// cannot be written is reported, and the sandbox goes on as it is: the
// sidecar finds containers by name, not by this file.
func (m *Manager) persist(b *box, prev, st *State) {
	if !m.mayWrite(b) {
		return // another process is working on the project and writes
	}
	if st == nil {
		m.warn(b, projectfs.SandboxFile(b.project), projectfs.RemoveRecord(b.project))
		if err := m.registry.Remove(b.project); err != nil {
			m.log.Warn().Err(err).Msg("could not update the project registry")
		}
		return
	}
	if !settled(st) {
		return // transitional, or a start that failed before there was a container
	}
	if prev != nil && projectfs.SameRecord(recordOf(*prev, time.Time{}), recordOf(*st, time.Time{})) {
		return
	}
	m.saveRecord(b, *st)
}

// saveRecord writes the state to .pilot/sandbox.json, reporting what was
// wrong with the file there, if anything.
func (m *Manager) saveRecord(b *box, st State) {
	if projectfs.Gone(b.project) {
		return // an orphan (see Orphans): its project stays deleted
	}
	now := m.cfg.Now()
	aside, err := projectfs.WriteRecord(b.project, recordOf(st, now), now)
	if aside != nil {
		m.warn(b, projectfs.SandboxFile(b.project), aside)
	}
	m.warn(b, projectfs.SandboxFile(b.project), err)
	if err := m.registry.Add(b.project); err != nil {
		m.log.Warn().Err(err).Msg("could not update the project registry")
	}
}

// recordOf is what .pilot/sandbox.json says of a state.
func recordOf(st State, now time.Time) projectfs.Record {
	return projectfs.Record{
		ContainerID:   st.ContainerID,
		ContainerName: st.ContainerName,
		Image:         st.Image,
		WSPort:        st.WSPort,
		VNCPort:       st.VNCPort,
		Status:        string(st.Status),
		Display:       projectfs.Display(st.Display),
		StopReason:    st.StopReason,
		CreatedAt:     st.CreatedAt,
		UpdatedAt:     now.UnixMilli(),
	}
}

// ensureRecord rewrites .pilot/sandbox.json when it does not say what the
// settled state says: lost, corrupt, or edited by hand since.
func (m *Manager) ensureRecord(b *box) {
	if !m.mayWrite(b) {
		return
	}
	st := b.snapshot()
	if !settled(st) {
		return
	}
	if rec, err := projectfs.ReadRecord(b.project); err == nil && rec != nil && projectfs.SameRecord(*rec, recordOf(*st, time.Time{})) {
		return
	}
	m.saveRecord(b, *st)
}

// warn reports a file problem once: to the log, and as a warning event,
// unless the same problem with the file was reported last time. A nil
// error for a file says it is fine again, so a later problem is news.
func (m *Manager) warn(b *box, file string, err error) {
	var fe *projectfs.FileError
	if err != nil && !errors.As(err, &fe) {
		m.log.Warn().Err(err).Str("project", b.project).Str("file", file).Msg("project file")
		return
	}
	b.mu.Lock()
	if b.reported == nil {
		b.reported = map[string]string{}
	}
	msg := ""
	if fe != nil {
		msg = fe.Error()
	}
	repeated := b.reported[file] == msg
	b.reported[file] = msg
	b.mu.Unlock()
	if fe == nil || repeated {
		return
	}
	m.log.Warn().Str("project", b.project).Str("file", fe.Path).Str("problem", string(fe.Problem)).Str("keptAs", fe.KeptAs).Err(fe.Err).Msg(msg)
	m.events.publish(Event{Kind: EventWarning, Project: b.project, Warning: Warning{
		ProjectPath: b.project, File: fe.Path, Problem: fe.Problem, KeptAs: fe.KeptAs, Message: msg,
	}})
}

// isReady says whether this run of the container is known to answer.
func (b *box) isReady(c Container) bool {
	r := b.runOf(c)
	b.mu.Lock()
	defer b.mu.Unlock()
	return r.ready
}

func (b *box) markReady(c Container) {
	r := b.runOf(c)
	b.mu.Lock()
	r.ready = true
	b.mu.Unlock()
}

// sigterm is the signal attribute of Docker's kill event for SIGTERM.
const sigterm = "15"

// termWindow is how long after a SIGTERM from outside a container that
// still runs counts as stopping: the desktop ends within 3 s of one, and
// Docker's SIGKILL follows a stop's grace period (10 s by default).
const termWindow = 30 * time.Second

// stoppingOutside says whether a running container was sent SIGTERM from
// outside during its current run, and lately. Seeing it stopped forgets
// the SIGTERM.
func (m *Manager) stoppingOutside(b *box, c Container) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.term.id == c.ID && !c.Running {
		b.term.id = "" // it stopped: its next run is a new one
	}
	return c.Running && b.term.id == c.ID && b.term.at.After(c.StartedAt) && m.cfg.Now().Sub(b.term.at) < termWindow
}
