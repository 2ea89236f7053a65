package disklimit

import (
	"strings"
	"testing"
	"time"
)

const mib = 1 << 20

// A run is warned once as it reaches WarnAt, again only after it went
// below, and may grow to the limit.
func TestNoteWarnsOnceAtNinetyPercent(t *testing.T) {
	var r Run
	var last Last
	for _, step := range []struct {
		used      int64
		warn      bool
		allowance int64
	}{
		{50 * mib, false, 100 * mib},
		{90 * mib, true, 100 * mib},
		{95 * mib, false, 100 * mib},
		{80 * mib, false, 100 * mib},
		{99 * mib, true, 100 * mib},
		{101 * mib, false, 100 * mib},
	} {
		warn, allowance := r.Note(&last, "c1", step.used, 100*mib)
		if warn != step.warn || allowance != step.allowance {
			t.Errorf("at %d MiB: warn %v, allowance %d MiB; want %v, %d MiB", step.used/mib, warn, allowance/mib, step.warn, step.allowance/mib)
		}
		if last != (Last{ID: "c1", Bytes: step.used}) {
			t.Errorf("at %d MiB: kept %+v", step.used/mib, last)
		}
	}
}

// A run that starts with its container last measured past the limit (a
// start to free space) may grow a tenth of the limit beyond that measure;
// a measure of another container does not count.
func TestARunStartedPastTheLimitMayGrowATenthMore(t *testing.T) {
	last := Last{ID: "c1", Bytes: 120 * mib}
	var r Run
	if _, allowance := r.Note(&last, "c1", 121*mib, 100*mib); allowance != 130*mib {
		t.Errorf("allowance %d MiB, want 130", allowance/mib)
	}
	// The allowance is fixed at the run's first measure.
	if _, allowance := r.Note(&last, "c1", 125*mib, 100*mib); allowance != 130*mib {
		t.Errorf("allowance %d MiB at the second measure, want 130", allowance/mib)
	}
	other := Last{ID: "c0", Bytes: 120 * mib}
	var fresh Run
	if _, allowance := fresh.Note(&other, "c1", 10*mib, 100*mib); allowance != 100*mib {
		t.Errorf("another container's measure gave an allowance of %d MiB", allowance/mib)
	}
}

func TestLastOf(t *testing.T) {
	l := Last{ID: "c1", Bytes: 5}
	if l.Of("c1") != 5 || l.Of("c2") != 0 || (Last{}).Of("") != 0 {
		t.Errorf("Of: %d, %d, %d", l.Of("c1"), l.Of("c2"), (Last{}).Of(""))
	}
}

// Near is the last measure at WarnAt of the allowance, never for a run
// not measured yet.
func TestNear(t *testing.T) {
	last := Last{ID: "c1", Bytes: 95 * mib}
	var r Run
	if _, near := r.Near(last, "c1", 100*mib); near {
		t.Error("a run not measured yet is near its limit")
	}
	r.Note(&last, "c1", 95*mib, 100*mib)
	if got, near := r.Near(last, "c1", 100*mib); !near || got != 95*mib {
		t.Errorf("95 of 100 MiB: %d MiB, near %v", got/mib, near)
	}
	r.Note(&last, "c1", 50*mib, 100*mib)
	if _, near := r.Near(last, "c1", 100*mib); near {
		t.Error("50 of 100 MiB is near")
	}
}

// A slow measure spaces the next by Cost times its length, at most MaxGap,
// and not at all once warned.
func TestSpace(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		took   time.Duration
		warned bool
		next   time.Duration
	}{
		{time.Millisecond, false, 100 * time.Millisecond},
		{2 * time.Second, false, MaxGap},
		{2 * time.Second, true, 0},
	} {
		r := Run{warned: tc.warned}
		if !r.Due(start) {
			t.Fatal("a run never measured is not due")
		}
		r.Space(start, start.Add(tc.took))
		if r.Due(start.Add(tc.next-time.Nanosecond)) && tc.next > 0 || !r.Due(start.Add(tc.next)) {
			t.Errorf("took %s (warned %v): not due exactly %s after its start", tc.took, tc.warned, tc.next)
		}
	}
}

func TestWords(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Warning(90*mib, 100*mib, 100*mib), "take 90MiB, 90% of its disk limit of 100MiB"},
		{Warning(120*mib, 100*mib, 130*mib), "past its disk limit of 100MiB (disk in config.json): it is stopped if they grow past 130MiB"},
		{Past(131*mib, 100*mib), "its files grew to 131MiB, past the disk limit of 100MiB"},
		{Unmeasured(10*time.Second, 95*mib, 100*mib), "within 10s, and took 95MiB, near its disk limit of 100MiB"},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("%q does not say %q", tc.got, tc.want)
		}
	}
}
