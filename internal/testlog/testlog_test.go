package testlog

import (
	"strings"
	"testing"
)

// fakeT records what is logged and runs its cleanups when told: a real
// test's t.Log after its end panics the whole binary.
type fakeT struct {
	testing.TB
	logged   []string
	cleanups []func()
}

func (f *fakeT) Helper()                {}
func (f *fakeT) Log(args ...any)        { f.logged = append(f.logged, args[0].(string)) }
func (f *fakeT) Cleanup(cleanup func()) { f.cleanups = append(f.cleanups, cleanup) }

func (f *fakeT) end() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestLogsAfterTheEndAreDropped(t *testing.T) {
	f := &fakeT{}
	l := New(f)
	l.Info().Msg("while the test runs")
	f.end()
	l.Info().Msg("after the test ended")
	if len(f.logged) != 1 || !strings.Contains(f.logged[0], "while the test runs") || strings.HasSuffix(f.logged[0], "\n") {
		t.Errorf("logged %q, want only the line logged while the test ran, without its newline", f.logged)
	}
}
