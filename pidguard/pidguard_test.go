package pidguard

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
)

// guard is a guard that ends as soon as it is read (killed from inside),
// and says whether it was closed.
type guard struct {
	io.Reader
	closed bool
}

func (g *guard) Close() error { g.closed = true; return nil }

// fakeRun is a run that goes on for goesOn looks at it, and whose starts
// fail from the failAt-th on (0: never).
type fakeRun struct {
	goesOn, failAt int
	looks          int
	guards         []*guard
}

func (r *fakeRun) Start() (io.ReadCloser, error) {
	if r.failAt != 0 && len(r.guards)+1 >= r.failAt {
		return nil, errors.New("the sandbox is at its process limit")
	}
	g := &guard{Reader: strings.NewReader("pidguard: watching")}
	r.guards = append(r.guards, g)
	return g, nil
}

func (r *fakeRun) GoesOn() bool {
	r.looks++
	return r.looks <= r.goesOn
}

func TestKeep(t *testing.T) {
	for _, tc := range []struct {
		name       string
		run        fakeRun
		wantStarts int // guards started after the first
		wantLooks  int
	}{
		{"the run ends with its first guard", fakeRun{goesOn: 0}, 0, 1},
		{"a guard killed twice while the run goes on is started twice", fakeRun{goesOn: 2}, 2, 3},
		{"a start that fails ends the keeping", fakeRun{goesOn: 5, failAt: 2}, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := &guard{Reader: strings.NewReader("")}
			r := tc.run
			done := make(chan struct{})
			go func() {
				Keep(&r, first, time.Millisecond, testlog.New(t))
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Keep did not return")
			}
			if len(r.guards) != tc.wantStarts || r.looks != tc.wantLooks {
				t.Errorf("started %d guards after the first, looked at the run %d times; want %d, %d",
					len(r.guards), r.looks, tc.wantStarts, tc.wantLooks)
			}
			if !first.closed {
				t.Error("the first guard's stream was not closed")
			}
			for i, g := range r.guards {
				if !g.closed {
					t.Errorf("guard %d's stream was not closed", i+2)
				}
			}
		})
	}
}
