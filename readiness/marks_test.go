package readiness

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeCarrier says a fixed answer of whether a proxy is carried.
type fakeCarrier struct {
	carried bool
	err     error
}

func (c fakeCarrier) Carried(context.Context, string) (bool, error) { return c.carried, c.err }

const id = "0123456789ab"

// A run is proved when its desktop answered and, for a run whose network
// is enforced, its rules were loaded and a process carries its proxy; a
// later run of the container is not.
func TestProved(t *testing.T) {
	run := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	carried, notCarried := fakeCarrier{carried: true}, fakeCarrier{}
	for _, tc := range []struct {
		name             string
		answered, loaded bool
		carrier          Carrier
		want             bool
	}{
		{"nothing marked", false, false, nil, false},
		{"answered, no network to enforce", true, false, nil, true},
		{"answered, rules not loaded", true, false, carried, false},
		{"answered, rules loaded, carried", true, true, carried, true},
		{"answered, rules loaded, not carried", true, true, notCarried, false},
		{"answered, rules loaded, the carrier unknown", true, true, fakeCarrier{true, errors.New("engine gone")}, false},
		{"rules loaded, carried, never answered", false, true, carried, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := NewMarks(dir)
			if tc.answered {
				mustMark(t, m.MarkAnswered(id, run))
			}
			if tc.loaded {
				mustMark(t, m.MarkLoaded(id, run))
			}
			ctx := context.Background()
			// Another process of the user, with the same state directory.
			other := NewMarks(dir)
			if got := other.Proved(ctx, tc.carrier, id, run); got != tc.want {
				t.Errorf("Proved = %v, want %v", got, tc.want)
			}
			if other.Proved(ctx, tc.carrier, id, run.Add(time.Second)) {
				t.Error("a later run of the container is proved")
			}
			if NewMarks(t.TempDir()).Proved(ctx, tc.carrier, id, run) {
				t.Error("proved for a process of another state directory")
			}
		})
	}
}

// Forget drops both of a container's marks; a process without a state
// directory proves nothing.
func TestForgetAndNoState(t *testing.T) {
	run := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	m := NewMarks(t.TempDir())
	mustMark(t, m.MarkAnswered(id, run))
	mustMark(t, m.MarkLoaded(id, run))
	ctx := context.Background()
	if !m.Proved(ctx, fakeCarrier{carried: true}, id, run) {
		t.Fatal("marked run not proved")
	}
	m.Forget(id)
	if m.Answered(id, run) || m.Carried(ctx, fakeCarrier{carried: true}, id, run) {
		t.Error("marks kept after Forget")
	}
	none := NewMarks("")
	mustMark(t, none.MarkAnswered(id, run))
	if none.Answered(id, run) {
		t.Error("a process without a state directory knows a run")
	}
}

func mustMark(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
