package egress

import (
	"context"
	"time"
)

// Carried says whether a helper of the sandbox runs: some process of the
// user carries its proxy (one helper per carrier; a helper that found
// the proxy in use has ended).
func (e *Enforcer) Carried(ctx context.Context, id string) (bool, error) {
	running, err := e.docker.RunningIDs(ctx, map[string]string{LabelHelper: e.cfg.Scope, LabelHelperOf: id})
	return len(running) > 0, err
}

// sweepAge is how long after its creation a helper that is not running is
// taken for one left behind. A launch creates its helper, attaches to it
// and starts it within the engine's call timeout (30 s): a helper still
// created a minute on belongs to a process that ended in between (a
// sidecar closed while a start put the rules in, the app quit), and one
// exited or dead should have been removed by the engine (AutoRemove). No
// process uses either again.
const sweepAge = time.Minute

// sweepOnce removes the scope's helpers left behind (sweep), once in the
// life of the enforcer, in the background of its first Start: the moment
// a process first launches helpers of its own. Close waits for it.
func (e *Enforcer) sweepOnce() {
	e.swept.Do(func() {
		e.background.Add(1)
		go func() {
			defer e.background.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e.sweep(ctx, sweepAge)
		}()
	})
}

// sweep removes the helpers of the scope that are not running and were
// created more than age ago, and returns how many it removed. Each is
// looked up by its labels alone, never by the sandbox it served: a helper
// of a sandbox that is gone is litter as well.
func (e *Enforcer) sweep(ctx context.Context, age time.Duration) int {
	ids, err := e.docker.IdleIDs(ctx, map[string]string{LabelHelper: e.cfg.Scope}, time.Now().Add(-age))
	if err != nil {
		e.cfg.Logger.Debug().Err(err).Msg("no sweep of the network helpers left behind")
		return 0
	}
	removed := 0
	for _, id := range ids {
		if err := e.docker.RemoveContainer(ctx, id); err != nil {
			e.cfg.Logger.Debug().Err(err).Str("helper", id).Msg("a network helper left behind stays")
			continue
		}
		removed++
	}
	if removed > 0 {
		e.cfg.Logger.Info().Int("helpers", removed).Msg("removed network helpers left behind: never started by a process that ended first, or ended and not removed")
	}
	return removed
}
