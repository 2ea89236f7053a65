// Package testlog gives tests a logger that writes to the test's log until
// the test has ended, and drops what comes after.
//
// A sidecar's goroutines outlive the call that started them: a guard's
// keeper, a readiness watch, an event follower may log a moment after the
// test that made them has ended, and testing panics on a t.Log after the
// test completed ("Log in goroutine after TestX has completed"), taking
// the whole test binary down with it. zerolog.NewTestWriter writes with
// t.Log as it is; this one stops at the test's last cleanup.
package testlog

import (
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

// New is a logger writing to t's log until t's cleanups have run. Call it
// before registering the cleanups whose logs should still be kept (those
// run first: cleanups run last registered, first called).
func New(t testing.TB) zerolog.Logger {
	w := &writer{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.ended = true
		w.mu.Unlock()
	})
	return zerolog.New(w)
}

type writer struct {
	t     testing.TB
	mu    sync.Mutex // held across t.Log, so the test cannot end during one
	ended bool
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.t.Helper()
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}
