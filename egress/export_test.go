package egress

import (
	"context"
	"testing"
	"time"
)

// StartWho starts a finder in the container for a test: look returns the
// pid and cause id of the process holding the connection from a port.
func StartWho(tb testing.TB, docker Containers, id string) (look func(port int) (int, string), stop func()) {
	f, err := startFinder(context.Background(), docker, id, 10*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	return func(port int) (int, string) {
		a, _ := f.find(context.Background(), port)
		return a.PID, a.Cause
	}, f.close
}

// Sweep removes the scope's helpers not running and created more than age
// ago, as the first Start of e does with a minute.
func Sweep(e *Enforcer, age time.Duration) int {
	return e.sweep(context.Background(), age)
}
