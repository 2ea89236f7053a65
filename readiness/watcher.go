package readiness

import (
	"context"
	"sync"
)

// A Watcher runs the background waits for runs found not ready yet: at
// most one per project at a time, however often the project is asked
// about (each resync asks again of every sandbox still starting).
type Watcher struct {
	asks chan string
}

// NewWatcher returns a watcher that holds up to queue asks not yet taken.
func NewWatcher(queue int) *Watcher {
	return &Watcher{asks: make(chan string, queue)}
}

// Ask asks for a wait for the project. It never waits itself (its caller
// may hold locks): when the queue is full, or no Run takes asks, the ask
// is dropped, and the next resync asks again.
func (w *Watcher) Ask(project string) {
	select {
	case w.asks <- project:
	default:
	}
}

// Run runs await for each project asked, unless a wait for it runs
// already, until ctx ends; it returns once every await has. await must
// end when its ctx does.
func (w *Watcher) Run(ctx context.Context, await func(ctx context.Context, project string)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	watching := map[string]bool{} // only Run's own goroutine touches it
	done := make(chan string)
	for {
		select {
		case <-ctx.Done():
			return
		case project := <-done:
			delete(watching, project)
		case project := <-w.asks:
			if watching[project] {
				continue
			}
			watching[project] = true
			wg.Go(func() {
				await(ctx, project)
				select {
				case done <- project:
				case <-ctx.Done():
				}
			})
		}
	}
}
