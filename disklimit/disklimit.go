// Package disklimit is the arithmetic of a sandbox's disk limit
// (docs/configuration.md, disk): what a container's own files (its
// writable layer) measured last, how far one run of it may grow (its
// allowance), when the user is warned, how often a layer that is slow to
// measure is measured, and the words of the warning and of a stop.
//
// It measures nothing, stops nothing and holds no lock: its values live in
// the caller's structures, under the caller's lock (service's box.mu), and
// the caller measures (the engine walks the layer) and decides to stop.
package disklimit

import (
	"fmt"
	"time"

	units "github.com/docker/go-units"
)

// A sandbox's own files are bounded by the policy's disk: the engine
// bounds the layer itself where its storage driver can, and the policy
// measures it every round everywhere (a slow walk is made less often,
// within bounds: Run.Space). At WarnAt percent of the limit the user is
// warned; past the limit the sandbox is stopped, saying why. A sandbox
// started again when it was last measured past its limit (to free space in
// it) may grow by a tenth of the limit beyond that measure before it is
// stopped again.

// WarnAt is the share of the limit that is warned of, in percent.
const WarnAt = 90

// The bounds on measuring a layer.
const (
	// Cost bounds what measuring a layer costs: the engine walks the
	// layer, which took 0.7 ms for a fresh sandbox and 73 ms for one
	// holding 20,000 files (engine's BenchmarkDiskUsage), and grows with
	// the files (2.6 s for 400,000 empty ones). A layer whose measure
	// takes longer than a hundredth of a round is measured only every
	// Cost times as long as it took, up to MaxGap, so that measuring
	// costs the engine about 1% of a CPU per sandbox (4% for the 400,000
	// files).
	Cost = 100
	// MaxGap bounds that wait: a layer made slow to walk must not keep a
	// fill of it unseen for minutes (with 400,000 files, 1.2 GB went
	// unseen for 155 s). A layer last measured near its limit (at WarnAt,
	// warned) is measured every round, whatever it costs.
	MaxGap = time.Minute
	// DefaultTimeout bounds one measure (the policy's DiskTimeout).
	DefaultTimeout = 10 * time.Second
)

// Last is what a container's layer measured last.
type Last struct {
	ID    string
	Bytes int64
}

// Of is the last measure of the container id, or 0.
func (l Last) Of(id string) int64 {
	if l.ID != id || id == "" {
		return 0
	}
	return l.Bytes
}

// Run is what the disk policy knows of one run of a container: whether it
// was measured, how far it may grow, whether its use was warned of, and
// when it is next measured. Its zero value is a run not measured yet.
type Run struct {
	seen      bool
	allowance int64
	warned    bool
	nextAt    time.Time // a slow layer is measured no sooner
}

// Due says whether the run's layer is to be measured at now.
func (r *Run) Due(now time.Time) bool { return !now.Before(r.nextAt) }

// Space puts off the next measure of a layer that took from started to
// now to measure, by Cost times that, at most MaxGap, and not at all when
// it was near its limit.
func (r *Run) Space(started, now time.Time) {
	spacing := min(Cost*now.Sub(started), MaxGap)
	if r.warned {
		spacing = 0
	}
	r.nextAt = started.Add(spacing)
}

// Near says what the container id measured last (in last) and whether
// that was near (at WarnAt of) how far the run may grow; a run not
// measured yet is not.
func (r *Run) Near(last Last, id string, limit int64) (int64, bool) {
	bytes := last.Of(id)
	return bytes, r.seen && bytes*100 >= max(r.allowance, limit)*WarnAt
}

// Note keeps the measure used of the container id in last, and says
// whether to warn (the first measure of the run at or above WarnAt, or the
// first since it went below) and how far the run may grow: to the limit,
// or, for a run that started past it, a tenth of the limit beyond where it
// was.
func (r *Run) Note(last *Last, id string, used, limit int64) (warn bool, allowance int64) {
	if !r.seen {
		// Past the limit when an earlier run was last measured (stopped
		// for it, most likely): started again to free space.
		r.seen = true
		r.allowance = limit
		if before := last.Of(id); before > limit {
			r.allowance = before + limit/10
		}
	}
	*last = Last{ID: id, Bytes: used}
	high := used*100 >= limit*WarnAt
	warn = high && !r.warned
	r.warned = high
	return warn, max(r.allowance, limit)
}

// Warning is what the user is told of files that take used, against the
// limit and the run's allowance.
func Warning(used, limit, allowance int64) string {
	if used <= limit {
		return fmt.Sprintf("The sandbox's files take %s, %d%% of its disk limit of %s (disk in config.json): "+
			"it is stopped if they grow past it. Free space in it, or raise the limit.", size(used), used*100/limit, size(limit))
	}
	return fmt.Sprintf("The sandbox's files take %s, past its disk limit of %s (disk in config.json): "+
		"it is stopped if they grow past %s. Free space in it, or raise the limit.", size(used), size(limit), size(allowance))
}

// Past is why a sandbox whose files grew to used was stopped.
func Past(used, limit int64) string {
	return fmt.Sprintf("stopped: its files grew to %s, past the disk limit of %s (disk in config.json); "+
		"free space in it, or raise the limit, before using it again", size(used), size(limit))
}

// Unmeasured is why a sandbox whose files could not be measured within
// timeout, and measured last near its limit, was stopped.
func Unmeasured(timeout time.Duration, last, limit int64) string {
	return fmt.Sprintf("stopped: its files could not be measured within %s, and took %s, "+
		"near its disk limit of %s (disk in config.json), when last measured; free space in it (many small files "+
		"make the measure slow), or raise the limit, before using it again", timeout, size(last), size(limit))
}

func size(n int64) string { return units.BytesSize(float64(n)) }
