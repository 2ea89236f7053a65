package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// Bounds of what is kept per sandbox run, so a flood of connections from
// inside costs a bounded amount of the sidecar's memory.
const (
	logSize     = 1000 // connection log entries
	blockedSize = 32   // distinct destinations blocked since the last look
)

// Entry is one connection in the log (docs/protocol.md, "Network policy":
// sandbox/network/log).
type Entry struct {
	Time     time.Time
	Project  string
	Host     string // the first name asked for, or the address
	Port     int
	Protocol string
	Allowed  bool
	By       string
	Rule     string
	Reason   string
	BytesIn  int64 // from the destination to the sandbox
	BytesOut int64
	Process  *Process
	Cause    *Cause
	Error    string // why an allowed connection failed, if it did
	Ended    bool   // its byte counts are final
}

// Blocked is a destination blocked since an agent last looked, with how
// many times and the last reason given.
type Blocked struct {
	Host   string
	Port   int
	Count  int
	Reason string
}

// connLog is a sandbox run's connection log and what was blocked since
// TakeBlocked last looked.
type connLog struct {
	mu      sync.Mutex // guards the fields below
	entries []*Entry   // oldest first, at most logSize
	byID    map[uint64]*Entry
	ids     map[*Entry]uint64
	blocked []Blocked // in order first blocked
	notify  func(Entry)
}

func newConnLog(notify func(Entry)) *connLog {
	return &connLog{byID: map[uint64]*Entry{}, ids: map[*Entry]uint64{}, notify: notify}
}

// add records a judged connection under the proxy's id (0 for a lookup);
// a refusal is counted for the agent's line by blockNow.
func (l *connLog) add(id uint64, e Entry) {
	l.mu.Lock()
	if len(l.entries) == logSize {
		old := l.entries[0]
		l.entries = l.entries[1:]
		delete(l.byID, l.ids[old])
		delete(l.ids, old)
	}
	p := &e
	l.entries = append(l.entries, p)
	if id != 0 && e.Allowed {
		l.byID[id], l.ids[p] = p, id
	} else {
		p.Ended = true
	}
	l.mu.Unlock()
	l.emit(e)
}

// blockNow counts a refusal for the agent's line, before its entry is
// added.
func (l *connLog) blockNow(e Entry) {
	l.mu.Lock()
	l.block(e)
	l.mu.Unlock()
}

// block counts a denial; beyond blockedSize destinations, new ones are
// dropped (the line an agent reads says so by its count alone).
func (l *connLog) block(e Entry) {
	i := slices.IndexFunc(l.blocked, func(b Blocked) bool { return b.Host == e.Host && b.Port == e.Port })
	switch {
	case i >= 0:
		l.blocked[i].Count++
		l.blocked[i].Reason = e.Reason
	case len(l.blocked) < blockedSize:
		l.blocked = append(l.blocked, Blocked{Host: e.Host, Port: e.Port, Count: 1, Reason: e.Reason})
	}
}

// refuse turns an allowed connection into a denied one: a name it gave
// after it was allowed was not.
func (l *connLog) refuse(id uint64, d Decision) {
	l.mu.Lock()
	e, ok := l.byID[id]
	if ok {
		e.Allowed, e.By, e.Rule, e.Reason = false, d.By, d.Rule, d.Reason
		l.block(*e)
	}
	l.mu.Unlock()
}

// finish records the end of a connection and its byte counts.
func (l *connLog) finish(id uint64, up, down int64, failure string) {
	l.mu.Lock()
	e, ok := l.byID[id]
	if ok {
		e.BytesOut, e.BytesIn, e.Error, e.Ended = up, down, failure, true
		delete(l.byID, id)
		delete(l.ids, e)
	}
	var copied Entry
	if ok {
		copied = *e
	}
	l.mu.Unlock()
	if ok {
		l.emit(copied)
	}
}

func (l *connLog) emit(e Entry) {
	if l.notify != nil {
		l.notify(e)
	}
}

// list returns the last n entries (all for n <= 0), oldest first.
func (l *connLog) list(n int) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := 0
	if n > 0 && n < len(l.entries) {
		from = len(l.entries) - n
	}
	out := make([]Entry, 0, len(l.entries)-from)
	for _, e := range l.entries[from:] {
		out = append(out, *e)
	}
	return out
}

// takeBlocked returns what was blocked since the last call, and forgets it.
func (l *connLog) takeBlocked() []Blocked {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.blocked
	l.blocked = nil
	return out
}

// hostLabel is how a connection's destination is named in the log: its
// first name, or its address.
func hostLabel(names []string, a netip.Addr) string {
	if len(names) > 0 {
		return names[0]
	}
	if a.IsValid() {
		return a.String()
	}
	return "?"
}

// defaultReason is the line a denied connection carries when its judge gave
// none.
func defaultReason(host string, port int) string {
	return fmt.Sprintf("pilot-sandbox blocked %s:%d; ask the user to allow it (pilot-sandbox net allow %s, or the sandbox panel)", host, port, host)
}

// runsOf returns the runs of the project's sandbox here.
func (e *Enforcer) runsOf(project string) []*run {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*run
	for _, r := range e.runs {
		if r.sb.project == project {
			out = append(out, r)
		}
	}
	return out
}

// Log returns the last n entries (all for n <= 0) of the project's
// connection log, as this process saw it, oldest first.
func (e *Enforcer) Log(project string, n int) []Entry {
	var out []Entry
	for _, r := range e.runsOf(project) {
		out = append(out, r.sb.log.list(n)...)
	}
	return out
}

// TakeBlocked returns what was blocked in the project's sandbox since the
// last call, and forgets it: the next exec result an agent sees names it.
func (e *Enforcer) TakeBlocked(project string) []Blocked {
	var out []Blocked
	for _, r := range e.runsOf(project) {
		out = append(out, r.sb.log.takeBlocked()...)
	}
	return out
}

// BlockedLine is one line for an agent naming what was blocked, or "".
func BlockedLine(bs []Blocked) string {
	if len(bs) == 0 {
		return ""
	}
	var parts []string
	for i, b := range bs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(bs)-i))
			break
		}
		s := fmt.Sprintf("%s:%d", b.Host, b.Port)
		if b.Count > 1 {
			s += fmt.Sprintf(" (%d times)", b.Count)
		}
		parts = append(parts, s)
	}
	return "Network: pilot-sandbox blocked " + strings.Join(parts, ", ") +
		". Only the user can allow a destination: ask them (pilot-sandbox net allow HOST, or the sandbox panel)."
}
