package sandboxfs

import "time"

// copyBuffer is the size of the buffer files are copied through.
const copyBuffer = 1 << 20

// reportEvery is how often a copy's progress is reported: often enough
// for a moving bar, seldom enough to cost nothing.
const reportEvery = 250 * time.Millisecond

// reporter counts a copy and reports it now and then. It is used by one
// goroutine at a time.
type reporter struct {
	report func(Copied, int64)
	total  int64
	done   Copied
	last   time.Time
}

func newReporter(report func(Copied, int64), total int64) *reporter {
	return &reporter{report: report, total: total, last: time.Now()}
}

func (r *reporter) add(files int, bytes int64) {
	r.done.Files += files
	r.done.Bytes += bytes
	if r.report != nil && time.Since(r.last) >= reportEvery {
		r.last = time.Now()
		r.report(r.done, r.total)
	}
}

// finish reports where the copy ended.
func (r *reporter) finish() {
	if r.report != nil {
		r.report(r.done, r.total)
	}
}
