package service

import (
	"strconv"
	"strings"
	"time"
)

// startTrace notes how long each step of a start took, for the debug log:
// where a start's time goes on the user's own machine (README,
// Performance), as BenchmarkStart's trace shows it for the benchmark. A nil
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
