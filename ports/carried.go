package ports

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Two processes of the user's often serve one project at once (the app's
// sidecar and an MCP server: docs/files-and-ports.md, "Who carries
// them"), each applying the same forwards from the user's state. The
// first to start a forward's listener carries it; the second finds the
// port taken by it. Each listener holds an abstract socket named for what
// it carries, the port and the host port (carryName), and the relay
// tells the second's start so (errCarried) when the one listening is a
// relay of the same user holding that name. The forward then works for
// both, and is reported so by both; the second tries to take it over
// every carriedRetry, which succeeds once the first process ended (its
// listener ends with it).

// errCarried: the port is taken by a listener carrying the same forward
// for another process of the user's. It is an errInUse, so that what
// looks for a free port (the gateway's, inner.go) goes on to the next.
var errCarried = fmt.Errorf("%w by another process's listener of the same forward", errInUse)

// carriedRetry is how often a carried forward is tried again: how long a
// forward may be down after the process that carried it ended.
const carriedRetry = 3 * time.Second

// carryName names what a listener carries: a forward of fw.Port to the
// host's fw.HostPort. The gateway carried in (inner.go) has the host port
// of its own process's listener, so two processes' never match.
func carryName(fw Forwarded) string {
	return "pilot-carry-" + strconv.Itoa(fw.Port) + "-" + strconv.Itoa(fw.HostPort)
}

// carriedElsewhere records that port's forward is carried by another
// process in set's run, and makes sure one goroutine tries to take it
// over. Called with f.ops held.
func (f *forwarder) carriedElsewhere(project string, set *forwardSet, port int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.projects[project] != set || f.stopped {
		return
	}
	if !set.carried[port] {
		f.log.Info().Str("project", project).Int("port", port).Msg("a forwarded port is carried by another process of the user's; it is taken over when that one ends")
	}
	set.carried[port] = true
	delete(set.errs, port)
	if !set.watching {
		set.watching = true
		f.applies.Go(func() { f.takeOver(project, set) })
	}
}

// takeOver tries, every carriedRetry, to start the listeners of the
// set's carried forwards, until none is left, the set is replaced (a new
// run, the sandbox stopped) or the forwarder stops.
func (f *forwarder) takeOver(project string, set *forwardSet) {
	for {
		select {
		case <-f.quit:
			return
		case <-time.After(carriedRetry):
		}
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		left := f.retryCarried(ctx, project, set)
		cancel()
		if !left {
			return
		}
	}
}

// retryCarried tries the set's carried forwards once; false when there
// is nothing left to try.
func (f *forwarder) retryCarried(ctx context.Context, project string, set *forwardSet) bool {
	f.ops.Lock()
	defer f.ops.Unlock()
	list, err := f.store.Read(project)
	if err != nil {
		return true
	}
	var todo []Forwarded
	f.mu.Lock()
	if f.projects[project] == set && !f.stopped {
		for _, p := range list {
			if set.carried[p.Port] {
				todo = append(todo, Forwarded{Port: p.Port, HostPort: p.HostPort})
			}
		}
	}
	clear(set.carried) // those no longer listed are left; the others come back below
	set.watching = len(todo) > 0
	f.mu.Unlock()
	if len(todo) == 0 {
		return false
	}
	t, ok, err := f.target(ctx, project)
	if err != nil || !ok || t.Run() != set.run {
		f.mu.Lock()
		for _, fw := range todo {
			set.carried[fw.Port] = true
		}
		set.watching = err != nil // a stop or a new run: its own apply follows
		f.mu.Unlock()
		return err != nil
	}
	for _, fw := range todo {
		l, err := f.startListener(ctx, t, fw)
		switch {
		case errors.Is(err, errCarried):
			f.mu.Lock()
			set.carried[fw.Port] = true
			f.mu.Unlock()
		case err != nil:
			f.failed(project, set, fw.Port, err)
		default:
			f.log.Info().Str("project", project).Int("port", fw.Port).Msg("took over a forwarded port from a process that ended")
			f.setLive(project, set, l)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	set.watching = len(set.carried) > 0
	return set.watching
}
