package engine

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// execGates keeps a pause of a container from landing while an exec of
// this process is starting in it. docker pause while an exec is starting
// wedges the container on runc 1.1 with cgroup v1: its freezer stays
// FREEZING, and every later inspect, unpause, stop and rm of it hangs
// until the cgroup is thawed by hand (docs/sandbox.md, Pause). Every exec
// the process starts passes createExec and startExec (exec.go, attach.go),
// and every pause PauseContainer: the gate is kept there.
//
// A pause holds the container's gate: new exec starts wait until it lets
// go; it waits for the starts in flight to be sent and for each exec sent
// to have started (a pid, or an exit), then pauses. Once the container is
// paused the engine itself refuses an exec (its create and its start both
// check), so the gate is held only for the pause's call.
type execGates struct {
	mu    sync.Mutex
	gates map[string]*execGate // by container ID; dropped when unused
}

// execGate is one container's gate.
type execGate struct {
	held     chan struct{}       // non-nil while a pause holds the gate; closed when it lets go
	starting int                 // exec creates and starts under way
	idle     chan struct{}       // closed when starting drops to zero while held
	sent     map[string]struct{} // execs started whose process may not run yet
}

// started says whether an exec sent to the engine has started its process
// (or failed to): the engine records a pid, or an exit code.
type startedFunc func(ctx context.Context, execID string) (bool, error)

// gate returns the container's gate, made if needed; g.mu is held.
func (g *execGates) gate(id string) *execGate {
	if g.gates == nil {
		g.gates = map[string]*execGate{}
	}
	gt := g.gates[id]
	if gt == nil {
		gt = &execGate{sent: map[string]struct{}{}}
		g.gates[id] = gt
	}
	return gt
}

// drop forgets a gate nobody uses; g.mu is held.
func (g *execGates) drop(id string, gt *execGate) {
	if gt.held == nil && gt.starting == 0 && len(gt.sent) == 0 {
		delete(g.gates, id)
	}
}

// enter waits until no pause holds the container's gate, then counts an
// exec start under way. Each enter is followed by one sent.
func (g *execGates) enter(ctx context.Context, id string) error {
	for {
		g.mu.Lock()
		gt := g.gate(id)
		held := gt.held
		if held == nil {
			gt.starting++
			g.mu.Unlock()
			return nil
		}
		g.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return fmt.Errorf("the sandbox is being paused: %w", ctx.Err())
		}
	}
}

// sent ends an enter: the exec's start was sent to the engine as execID
// ("" when its create or start failed). Each execID sent is followed by
// one ended.
func (g *execGates) sent(id, execID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gt := g.gate(id)
	gt.starting--
	if execID != "" {
		gt.sent[execID] = struct{}{}
	}
	if gt.starting == 0 && gt.idle != nil {
		close(gt.idle)
		gt.idle = nil
	}
	g.drop(id, gt)
}

// ended says the exec is over: a pause need not wait for it.
func (g *execGates) ended(id, execID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gt := g.gate(id)
	delete(gt.sent, execID)
	g.drop(id, gt)
}

// hold takes the container's gate (after a pause holding it lets go),
// waits for the exec starts under way to be sent and for every exec sent
// to have started, and returns the function that lets the gate go. It
// fails, letting the gate go, when ctx ends first.
func (g *execGates) hold(ctx context.Context, id string, started startedFunc) (func(), error) {
	release, err := g.take(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := g.settle(ctx, id, started); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// take holds the gate once the starts under way are sent.
func (g *execGates) take(ctx context.Context, id string) (func(), error) {
	for {
		g.mu.Lock()
		gt := g.gate(id)
		if held := gt.held; held != nil {
			g.mu.Unlock()
			select {
			case <-held:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("another pause of the container is under way: %w", ctx.Err())
			}
		}
		done := make(chan struct{})
		gt.held = done
		release := func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			gt.held = nil
			close(done)
			g.drop(id, gt)
		}
		idle := make(chan struct{})
		if gt.starting == 0 {
			close(idle)
		} else {
			gt.idle = idle
		}
		g.mu.Unlock()
		select {
		case <-idle:
			return release, nil
		case <-ctx.Done():
			release()
			return nil, fmt.Errorf("an exec is still starting in the sandbox: %w", ctx.Err())
		}
	}
}

// settle waits for every exec sent to the container to have started. The
// gate is held: no exec is added meanwhile.
func (g *execGates) settle(ctx context.Context, id string, started startedFunc) error {
	g.mu.Lock()
	var pending []string
	for execID := range g.gate(id).sent {
		pending = append(pending, execID)
	}
	g.mu.Unlock()
	for _, execID := range pending {
		if err := waitStarted(ctx, execID, started); err != nil {
			return err
		}
		g.ended(id, execID) // started: a later pause need not ask again
	}
	return nil
}

// waitStarted polls started until the exec has started or ctx ends.
func waitStarted(ctx context.Context, execID string, started startedFunc) error {
	delay := time.Millisecond
	for {
		ok, err := started(ctx, execID)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("an exec is still starting in the sandbox: %w", ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 20*time.Millisecond)
	}
}
