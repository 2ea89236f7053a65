package tasks

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// Times of a task's start and follow.
const (
	// startWait bounds how long Start waits for the runner to say the
	// task's program started.
	startWait = 30 * time.Second
	// refollowEvery is the pause before following a task again after its
	// follow exec broke; refollowTries the tries without progress.
	refollowEvery = time.Second
	refollowTries = 10
	// saveEvery is how often a running task's record is saved (for the
	// count of its events a reattach starts from).
	saveEvery = 2 * time.Second
	// maxRecordLine bounds a runner record: a line of output is at most
	// 1 MiB, which JSON can make six times longer.
	maxRecordLine = 8 << 20
)

// Start starts a task in the project's running sandbox: it syncs the
// project into /workspace first (unless req.NoSync), then runs the agent
// there, and returns the task's record once its program started (or
// failed to). Report hears the sync's progress (may be nil).
func (m *Manager) Start(ctx context.Context, req StartRequest, report func(workspace.Progress)) (Record, error) {
	project, err := projectfs.Canonical(req.ProjectPath)
	if err != nil {
		return Record{}, err
	}
	argv, err := req.argv()
	if err != nil {
		return Record{}, err
	}
	timeout, err := req.timeout()
	if err != nil {
		return Record{}, err
	}
	id := newID()
	env, err := req.env(id)
	if err != nil {
		return Record{}, err
	}
	sb, err := m.sandboxes.Running(ctx, project)
	if err != nil {
		return Record{}, err
	}
	access, err := m.openModels(ctx, project, id)
	if err != nil {
		return Record{}, fmt.Errorf("open the model gateway to the task: %w", err)
	}
	switch req.Agent {
	case AgentCodex:
		argv = codexConfig(argv, access.Env)
	case AgentClaude:
		argv = claudeMCP(argv, access.Env)
	}
	t, err := m.prepare(ctx, sb, Record{
		ID: id, ProjectPath: project, Agent: req.Agent, Prompt: req.Prompt, Argv: argv,
		Timeout: timeout.String(), Container: sb.ContainerID(), Status: StatusRunning, StartedAt: time.Now().UnixMilli(),
	}, !req.NoSync, report)
	if err != nil {
		if access.End != nil {
			access.End()
		}
		return Record{}, err
	}
	t.keepAccess(access)
	m.saveAccess(t)
	env = withModels(env, access.Env)
	started := make(chan error, 1)
	m.wg.Add(1)
	limit := strconv.Itoa(m.maxTasks(project))
	go m.run(t, sb, m.runnerArgv("start", id, strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64), limit, "--"), env, started)
	select {
	case err = <-started:
	case <-time.After(startWait):
		err = errors.New("the task's program did not start in time")
	}
	return t.record(), err
}

// prepare syncs (if asked) and records the task, under the workspace's
// lock. A sync is refused while a task runs (its files would change under
// it); how many tasks may run at once the runner decides as it starts
// one, whichever sidecar started the others.
func (m *Manager) prepare(ctx context.Context, sb workspace.Sandbox, rec Record, sync bool, report func(workspace.Progress)) (*task, error) {
	unlock := m.lock(sb.ContainerID())
	defer unlock()
	ws := m.workspace(sb, rec.ProjectPath)
	if sync {
		if err := m.idle(ctx, sb, "a sync would change the files under it: start with sync false"); err != nil {
			return nil, err
		}
		res, err := ws.Sync(ctx, report)
		if err != nil {
			return nil, err
		}
		rec.Base = res.Base
	} else {
		base, err := ws.Base()
		if err != nil {
			return nil, fmt.Errorf("%w: sync first, or start with sync true", err)
		}
		rec.Base = base
	}
	if err := m.records.save(rec); err != nil {
		return nil, fmt.Errorf("record the task: %w", err)
	}
	t := newTask(rec)
	m.mu.Lock()
	m.tasks[rec.ID] = t
	m.mu.Unlock()
	return t, nil
}

// run starts the task's runner and follows it to its end. A start the
// runner refused (as many tasks as allowed run) leaves no record.
func (m *Manager) run(t *task, sb workspace.Sandbox, argv, env []string, started chan<- error) {
	defer m.wg.Done()
	rec := t.record()
	res, fin, err := m.stream(m.ctx, t, sb, append(argv, rec.Argv...), env, started)
	if fin == nil && err == nil && res.ExitCode == exitBusy {
		t.endAccess()
		m.forget(rec.ID)
		started <- fmt.Errorf("%w: %s", ErrBusy, stderrText(res))
		return
	}
	if fin == nil && err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("the task runner failed: %s", stderrText(res))
	}
	if fin == nil && err != nil && t.lastSeen() == 0 {
		// It never started: nothing to follow.
		started <- err
		m.finish(t, Finished{Status: StatusFailed, ExitCode: -1, Error: err.Error()})
		return
	}
	m.records.prune()
	m.follow(t, sb, fin)
}

// forget drops a task that never was: its start was refused.
func (m *Manager) forget(id string) {
	m.mu.Lock()
	delete(m.tasks, id)
	m.mu.Unlock()
	m.records.remove(id)
	m.records.removeAccess(id)
}

// follow follows the task again until its last record, while the sandbox
// runs the container it started in; a task whose container went away is
// lost.
func (m *Manager) follow(t *task, sb workspace.Sandbox, fin *Finished) {
	rec := t.record()
	for tries := 0; fin == nil && tries < refollowTries; tries++ {
		if m.ctx.Err() != nil {
			m.handOn(t) // this sidecar stops; the next one reattaches
			return
		}
		cur, err := m.sandboxes.Running(m.ctx, rec.ProjectPath)
		if err != nil || cur.ContainerID() != rec.Container {
			fin = &Finished{Status: StatusLost, ExitCode: -1, Error: "the sandbox stopped while the task ran"}
			break
		}
		sb = cur
		before := t.lastSeen()
		_, fin, _ = m.stream(m.ctx, t, sb, m.runnerArgv("follow", rec.ID, strconv.Itoa(before)), taskEnv(rec.ID), nil)
		if t.lastSeen() > before {
			tries = 0
		}
		if fin == nil {
			sleepCtx(m.ctx, refollowEvery)
		}
	}
	if fin == nil {
		if m.ctx.Err() != nil {
			m.handOn(t)
			return
		}
		fin = &Finished{Status: StatusLost, ExitCode: -1, Error: "the task's records could not be read"}
	}
	m.finish(t, *fin)
}

// handOn saves a running task's record and access as this sidecar stops
// following it, for the next one.
func (m *Manager) handOn(t *task) {
	m.records.save(t.record())
	m.saveAccess(t)
}

// stream runs one runner command whose output is records, and reads them
// into the task's events until the last one. It returns how the exec
// ended, and the task's end if its last record came.
func (m *Manager) stream(ctx context.Context, t *task, sb workspace.Sandbox, argv, env []string, started chan<- error) (workspace.Result, *Finished, error) {
	pr, pw := io.Pipe()
	finished := make(chan *Finished, 1)
	go func() {
		// Ends when the exec's output ends (pw closed below) or a last
		// record came.
		fin := m.consume(t, pr, started)
		pr.CloseWithError(errStopReading)
		finished <- fin
	}()
	res, err := sb.Exec(ctx, workspace.Command{Argv: argv, Env: env, Stdout: pw, MaxOutput: maxStderr})
	pw.Close()
	return res, <-finished, err
}

// errStopReading ends a runner exec whose records are all read.
var errStopReading = errors.New("the task's records are read")

// consume reads runner records until the last one, turning them into
// events; it signals started at the first record.
func (m *Manager) consume(t *task, r io.Reader, started chan<- error) *Finished {
	br := bufio.NewReaderSize(r, 64<<10)
	saved := time.Now()
	for {
		line, err := readLine(br, maxRecordLine)
		if err != nil {
			return nil
		}
		if len(line) == 0 {
			continue // the runner's keepalive
		}
		evs, fin := t.read(line)
		if started != nil && (len(evs) > 0 || fin != nil) {
			started <- nil
			started = nil
		}
		for _, ev := range evs {
			m.emit(t, ev)
		}
		if fin != nil {
			return fin
		}
		if time.Since(saved) > saveEvery {
			m.records.save(t.record())
			m.saveAccess(t)
			saved = time.Now()
		}
	}
}

// emit keeps an event and sends it.
func (m *Manager) emit(t *task, ev Event) {
	seq, send := t.add(ev)
	if send {
		rec := t.record()
		m.notify(Notification{TaskID: rec.ID, ProjectPath: rec.ProjectPath, Seq: seq, Event: ev})
	}
}

// finish saves the task's change (when its container still runs), records
// how it ended, and sends its finished event.
func (m *Manager) finish(t *task, fin Finished) {
	rec := t.record()
	if sb := m.liveSandbox(context.Background(), rec); sb != nil {
		commit, err := m.saveChange(sb, rec)
		fin.Commit = commit
		if err != nil {
			fin.Error = joinErr(fin.Error, "its change was not saved: "+err.Error())
		}
	}
	t.numberAfterUnread()
	u := t.endAccess()
	m.records.removeAccess(rec.ID)
	if u != nil && u.Requests > 0 {
		u.Source = SourceGateway
		m.emit(t, Event{Type: TypeUsage, TimeMs: fin.DurationMs, Body: u})
	}
	sum := t.parser.summary()
	fin.CostUsd, fin.Turns = sum.costUsd, sum.turns
	if fin.Error == "" {
		fin.Error = sum.err
	}
	t.mu.Lock()
	t.rec.Status, t.rec.Finished, t.rec.FinishedAt = fin.Status, &fin, time.Now().UnixMilli()
	t.ended = true
	t.mu.Unlock()
	m.emit(t, Event{Type: TypeFinished, TimeMs: fin.DurationMs, Body: &fin})
	if err := m.records.save(t.record()); err != nil {
		m.opts.Logger.Warn().Err(err).Str("task", rec.ID).Msg("record the task's end")
	}
	close(t.done)
	m.letGo()
}

// letGo forgets the oldest ended tasks past maxEnded: their events are read
// again from their sandbox when asked for.
func (m *Manager) letGo() {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ended []*task
	for _, t := range m.tasks {
		if t.record().Status != StatusRunning {
			ended = append(ended, t)
		}
	}
	slices.SortFunc(ended, func(a, b *task) int { return cmp.Compare(b.record().StartedAt, a.record().StartedAt) })
	for _, t := range ended[min(len(ended), maxEnded):] {
		delete(m.tasks, t.record().ID)
	}
}
