package readiness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// ErrNotAnswering: a running container's desktop did not answer in time.
var ErrNotAnswering = errors.New("the desktop did not answer")

// How Wait polls. A desktop answers within a few hundred milliseconds of
// the engine's start, and a probe that finds it not yet answering mostly
// costs a millisecond or two (nothing listens behind the published port
// yet), so the first seconds are polled tightly: each poll saved is time
// the user waits (docs/performance.md, A start). A desktop that takes
// longer is polled less and less often.
const (
	maxDelay     = 500 * time.Millisecond
	firstDelay   = 10 * time.Millisecond
	tightPolling = 3 * time.Second
)

// A Desktop is one container's desktop as Wait sees it; C is the caller's
// view of the container, which Wait hands back as it last saw it.
type Desktop[C any] interface {
	// Look reads the container again: its host ports change on every
	// start, and are carried by the caller for some sandboxes.
	Look(ctx context.Context) (C, Look, error)
	// Probe asks the desktop of c behind host port ws whether it answers,
	// proving that it is c's own.
	Probe(ctx context.Context, c C, ws int) error
}

// Look is what one look at the container saw.
type Look struct {
	Running  bool
	ExitCode int // when it is not running
	// WSPort is the host port of its noVNC port, 0 when it has none
	// (yet); NoPort says why, when the caller knows.
	WSPort int
	NoPort error
}

// Wait polls d until its desktop answers, within timeout, and returns the
// container as that look saw it. Each poll first looks at the container,
// so that a desktop that crashed fails at once instead of at the timeout
// (as testcontainers-go's wait does). A viewer or VNC server that is not
// the sandbox's own fails at once too: it is not a desktop still
// starting.
func Wait[C any](ctx context.Context, d Desktop[C], timeout time.Duration) (C, error) {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay, began := firstDelay, time.Now()
	var lastErr error
	for {
		c, look, err := d.Look(waitCtx)
		switch {
		case ctx.Err() != nil:
			return c, ctx.Err()
		case waitCtx.Err() != nil:
			return c, fmt.Errorf("%w within %s: %v", ErrNotAnswering, timeout, lastErr)
		case err != nil:
			return c, err
		case !look.Running:
			return c, fmt.Errorf("the container exited with code %d before its desktop was ready", look.ExitCode)
		}
		if look.WSPort != 0 {
			probeCtx, cancelProbe := context.WithTimeout(waitCtx, desktop.ProbeTimeout)
			lastErr = d.Probe(probeCtx, c, look.WSPort)
			cancelProbe()
			if lastErr == nil || errors.Is(lastErr, desktop.ErrViewerMismatch) || errors.Is(lastErr, desktop.ErrNotOurVNCServer) {
				return c, lastErr
			}
		} else {
			lastErr = cmp.Or(look.NoPort, errors.New("the container has no published noVNC port"))
		}
		select {
		case <-waitCtx.Done():
		case <-time.After(delay):
		}
		if time.Since(began) > tightPolling {
			delay = min(2*delay, maxDelay)
		}
	}
}
