package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	units "github.com/docker/go-units"
)

// A sandbox's own files (its container's writable layer) are bounded by
// the policy's disk: the engine bounds the layer itself where its storage
// driver can (ContainerSpec.DiskBytes), and the policy measures it every
// round everywhere (the engine walks the layer to answer: DiskUsage; a
// slow walk is made less often, within bounds, below). At 90% the user is
// warned; past the limit the sandbox is stopped, saying why. A sandbox started again when it was last measured past its limit
// (to free space in it) may grow by a tenth of the limit beyond that
// measure before it is stopped again.

// ProblemDisk is the problem of a Warning about a sandbox's disk use: it
// names no file.
const ProblemDisk = "disk"

// diskWarnAt is the share of the limit that is warned of, in percent.
const diskWarnAt = 90

// diskUse is what a box's container's layer measured last. Guarded by the
// box's mu.
type diskUse struct {
	id    string
	bytes int64
}

// of is the last measure of the container, or 0.
func (d diskUse) of(id string) int64 {
	if d.id != id || id == "" {
		return 0
	}
	return d.bytes
}

// checkDisk measures the sandbox's files, warns at 90% of limit and stops
// it past its allowance (when stops allows). A measure that takes longer
// than the policy's diskTimeout is given up; if the last one was near the
// allowance, the sandbox is stopped too: whatever makes its layer slow to
// walk must not hide it growing past its limit. It says whether it
// stopped.
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
		last, near := b.nearDiskLimit(r, st.ContainerID, limit)
		if !timedOut || !near || !stops {
			return false
		}
		return m.stopForDisk(ctx, b, st, fmt.Sprintf("stopped: its files could not be measured within %s, and took %s, "+
			"near its disk limit of %s (disk in config.json), when last measured; free space in it (many small files "+
			"make the measure slow), or raise the limit, before using it again", m.policy.diskTimeout, size(last), size(limit)))
	}
	warn, allowance := b.noteDisk(r, st.ContainerID, used, limit)
	m.spaceDisk(b, r, started)
	if warn {
		m.warnDisk(b, used, limit, allowance)
	}
	if used <= allowance || !stops {
		return false
	}
	return m.stopForDisk(ctx, b, st, fmt.Sprintf("stopped: its files grew to %s, past the disk limit of %s (disk in config.json); "+
		"free space in it, or raise the limit, before using it again", size(used), size(limit)))
}

// stopForDisk stops the sandbox, saying why, and says whether it stopped.
func (m *Manager) stopForDisk(ctx context.Context, b *box, st State, why string) bool {
	m.policyStop(ctx, b, st.ContainerID, why, func() bool { return true })
	now := b.snapshot()
	return now != nil && now.Status == StatusStopped
}

// The policy's bounds on measuring a layer.
const (
	// diskCost bounds what measuring a layer costs: the engine walks the
	// layer, which took 0.7 ms for a fresh sandbox and 73 ms for one
	// holding 20,000 files (BenchmarkDiskUsage), and grows with the
	// files (2.6 s for 400,000 empty ones). A layer whose measure takes
	// longer than a hundredth of a round is measured only every diskCost
	// times as long as it took, up to maxDiskGap, so that measuring costs
	// the engine about 1% of a CPU per sandbox (4% for the 400,000 files).
	diskCost = 100
	// maxDiskGap bounds that wait: a layer made slow to walk must not
	// keep a fill of it unseen for minutes (with 400,000 files, 1.2 GB
	// went unseen for 155 s). A layer last measured near its limit (at
	// 90%, warned) is measured every round, whatever it costs.
	maxDiskGap = time.Minute
	// defaultDiskTimeout bounds one measure (PolicyConfig.DiskTimeout).
	defaultDiskTimeout = 10 * time.Second
)

// diskDue says whether the run's layer is to be measured this round.
func (m *Manager) diskDue(b *box, r *run) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !m.cfg.Now().Before(r.diskNextAt)
}

// spaceDisk puts off the next measure of a layer that was slow to measure,
// by at most maxDiskGap, and not at all when it was near its limit.
func (m *Manager) spaceDisk(b *box, r *run, started time.Time) {
	now := m.cfg.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	spacing := min(diskCost*now.Sub(started), maxDiskGap)
	if r.diskWarned {
		spacing = 0
	}
	r.diskNextAt = started.Add(spacing)
}

// nearDiskLimit says what the run's layer measured last and whether that
// was near (at 90% of) how far it may grow; a run not measured yet is not.
func (b *box) nearDiskLimit(r *run, id string, limit int64) (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	last := b.disk.of(id)
	return last, r.diskSeen && last*100 >= max(r.diskAllowance, limit)*diskWarnAt
}

// noteDisk keeps the measure, and says whether to warn (the first measure
// of the run at or above 90%, or the first since it went below) and how
// far the run may grow: to the limit, or, for a run that started past it,
// a tenth of the limit beyond where it was.
func (b *box) noteDisk(r *run, id string, used, limit int64) (warn bool, allowance int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !r.diskSeen {
		// Past the limit when an earlier run was last measured (stopped
		// for it, most likely): started again to free space.
		r.diskSeen = true
		r.diskAllowance = limit
		if before := b.disk.of(id); before > limit {
			r.diskAllowance = before + limit/10
		}
	}
	b.disk = diskUse{id: id, bytes: used}
	if b.state != nil && b.state.ContainerID == id {
		b.state.DiskBytes = used
	}
	high := used*100 >= limit*diskWarnAt
	warn = high && !r.diskWarned
	r.diskWarned = high
	return warn, max(r.diskAllowance, limit)
}

func (m *Manager) warnDisk(b *box, used, limit, allowance int64) {
	var msg string
	switch {
	case used <= limit:
		msg = fmt.Sprintf("The sandbox's files take %s, %d%% of its disk limit of %s (disk in config.json): "+
			"it is stopped if they grow past it. Free space in it, or raise the limit.", size(used), used*100/limit, size(limit))
	default:
		msg = fmt.Sprintf("The sandbox's files take %s, past its disk limit of %s (disk in config.json): "+
			"it is stopped if they grow past %s. Free space in it, or raise the limit.", size(used), size(limit), size(allowance))
	}
	m.log.Warn().Str("project", b.project).Int64("diskBytes", used).Int64("limit", limit).Msg(msg)
	m.events.publish(Event{Kind: EventWarning, Project: b.project, Warning: Warning{
		ProjectPath: b.project, Problem: ProblemDisk, Message: msg,
	}})
}

func size(n int64) string { return units.BytesSize(float64(n)) }
