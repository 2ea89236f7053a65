package main

import (
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// The connection log: egress reports each connection as it ends (or is
// denied) to Record; the entries reach the watching clients at once
// (sandbox/network) and the user's state (projectfs.NetLog) in batches,
// so that a flood of connections from inside costs a write a quarter of a
// second, not one a connection.

const (
	// logFlushEvery is how often the recorded entries are written.
	logFlushEvery = 250 * time.Millisecond
	// maxUnwritten bounds the entries of one project waiting for a write
	// (4,000 a second); past it they are not logged. The agent still
	// learns what was blocked (egress's count of it), and the client of a
	// watch still hears each.
	maxUnwritten = 1000
)

// netLog is the log's writer and its watchers.
type netLog struct {
	store projectfs.NetLog

	mu        sync.Mutex // guards the fields below
	unwritten map[string][]projectfs.NetLogEntry
	watchers  map[string]map[*int]func(projectfs.NetLogEntry)
	flushing  bool          // the flusher runs
	stop      chan struct{} // closed to end the flusher
	stopped   chan struct{} // closed when it has
}

func newNetLog(store projectfs.NetLog) *netLog {
	return &netLog{store: store, unwritten: map[string][]projectfs.NetLogEntry{},
		watchers: map[string]map[*int]func(projectfs.NetLogEntry){}, stop: make(chan struct{}), stopped: make(chan struct{})}
}

// Record keeps a connection in the project's log and tells its watchers.
func (l *netLog) Record(project string, e projectfs.NetLogEntry) {
	l.mu.Lock()
	if len(l.unwritten[project]) < maxUnwritten {
		l.unwritten[project] = append(l.unwritten[project], e)
	}
	if !l.flushing {
		l.flushing = true
		go l.flusher() // ends with close
	}
	fns := make([]func(projectfs.NetLogEntry), 0, len(l.watchers[project]))
	for _, fn := range l.watchers[project] {
		fns = append(fns, fn)
	}
	l.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
}

// WatchLog calls fn with each entry the project's log gains until stop;
// fn must not block.
func (l *netLog) WatchLog(project string, fn func(projectfs.NetLogEntry)) (stop func(), err error) {
	key := new(int)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watchers[project] == nil {
		l.watchers[project] = map[*int]func(projectfs.NetLogEntry){}
	}
	l.watchers[project][key] = fn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.watchers[project], key)
		if len(l.watchers[project]) == 0 {
			delete(l.watchers, project)
		}
	}, nil
}

// Log is the project's last limit entries: those written, then those
// waiting for the next write.
func (l *netLog) Log(project string, limit int) ([]projectfs.NetLogEntry, error) {
	entries, err := l.store.Tail(project, limit)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	entries = append(entries, l.unwritten[project]...)
	l.mu.Unlock()
	return entries[max(0, len(entries)-limit):], nil
}

func (l *netLog) flusher() {
	defer close(l.stopped)
	t := time.NewTicker(logFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			l.flush()
			return
		case <-t.C:
			l.flush()
		}
	}
}

// flush writes what waits. A write that fails loses those entries: the
// log is a record for the user, and the connections went on regardless.
func (l *netLog) flush() {
	l.mu.Lock()
	batch := l.unwritten
	l.unwritten = map[string][]projectfs.NetLogEntry{}
	l.mu.Unlock()
	for project, entries := range batch {
		l.store.Append(project, entries)
	}
}

// close writes what waits and ends the flusher.
func (l *netLog) close() {
	l.mu.Lock()
	running := l.flushing
	l.mu.Unlock()
	if running {
		close(l.stop)
		<-l.stopped
	}
}
