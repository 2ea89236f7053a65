package tasks

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"
)

// Bounds on the events a task keeps in memory for sandbox/tasks/get: past
// them the oldest go (the sandbox keeps all of them in its records).
const (
	maxKeptEvents = 5000
	maxKeptBytes  = 16 << 20
	// maxEnded bounds the ended tasks kept in memory; the others' events
	// are read again from their sandbox when asked for.
	maxEnded = 16
)

// task is a task this process follows.
type task struct {
	parser parser
	done   chan struct{} // closed when the task ended and its record says so
	// endModels ends the task's access to the model gateway (once),
	// usedModels is what it used so far, and resume what a sidecar that
	// reattaches needs to take it again: set before its runner starts or
	// as this process reattaches (keepAccess); nil without access.
	endModels  func() *Usage
	usedModels func() Usage
	resume     json.RawMessage

	mu        sync.Mutex // guards the fields below
	rec       Record
	events    []Event
	dropped   int // events let go from the front
	keptBytes int
	// seq counts the events so far; notified is the last one that went
	// out (a reattach reads the earlier ones again without sending them).
	seq, notified int
	lastRecord    int  // the number of the last runner record read
	ended         bool // the runner's last record was read
}

func newTask(rec Record) *task {
	return &task{parser: newParser(rec.Agent), done: make(chan struct{}), rec: rec, notified: rec.Events}
}

func (t *task) record() Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rec
}

// add keeps an event and returns its number, and whether it is one to
// send (not sent before a reattach).
func (t *task) add(ev Event) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	t.rec.Events = t.seq
	t.events = append(t.events, ev)
	t.keptBytes += approxSize(ev)
	for len(t.events) > maxKeptEvents || t.keptBytes > maxKeptBytes && len(t.events) > 1 {
		t.keptBytes -= approxSize(t.events[0])
		t.events[0] = Event{}
		t.events = t.events[1:]
		t.dropped++
	}
	if t.seq <= t.notified {
		return t.seq, false
	}
	t.notified = t.seq
	return t.seq, true
}

// numberAfterUnread makes the events still to come (a task's end)
// follow those an earlier sidecar sent and this one did not read again
// (its sandbox gone, or its records unreadable): numbered after them, so
// that they are sent, not taken for ones sent already. What this process
// holds of them is let go; sandbox/tasks/get reads them again from the
// sandbox where it still runs.
func (t *task) numberAfterUnread() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seq < t.notified {
		t.dropped, t.seq, t.events, t.keptBytes = t.notified, t.notified, nil, 0
	}
}

// snapshot is the task's record and the events it keeps, the first of
// them numbered dropped+1.
func (t *task) snapshot() (Record, []Event, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rec, append([]Event(nil), t.events...), t.dropped
}

// approxSize is about what an event costs in memory: its texts.
func approxSize(ev Event) int {
	n := 64
	switch b := ev.Body.(type) {
	case *Text:
		n += len(b.Text)
	case *Tool:
		n += len(b.Name) + len(b.Input)
	case *ToolResult:
		n += len(b.Name) + len(b.Output)
	case *Line:
		n += len(b.Text)
	case *Started:
		for _, a := range b.Argv {
			n += len(a)
		}
	}
	return n
}

// newID makes a task's id: its start time (so ids sort by it) and random
// letters.
func newID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// runnerRecord is one record the runner writes (resources/tasks/runner.py).
type runnerRecord struct {
	Seq     int   `json:"seq"`
	T       int64 `json:"t"`
	Started *struct {
		Pid int `json:"pid"`
	} `json:"started"`
	Stream string  `json:"stream"`
	Line   *string `json:"line"`
	Cut    int     `json:"cut"`
	Flood  *struct {
		AfterLines int `json:"afterLines"`
	} `json:"flood"`
	End *struct {
		Status       string `json:"status"`
		ExitCode     int    `json:"exitCode"`
		DurationMs   int64  `json:"durationMs"`
		DroppedLines int    `json:"droppedLines"`
	} `json:"end"`
	Lost string `json:"lost"`
}

// runnerStatuses are the statuses a runner's last record may say.
var runnerStatuses = map[string]bool{StatusSucceeded: true, StatusFailed: true, StatusCancelled: true, StatusTimedOut: true}

// read turns one runner record into the task's events, and says how the
// task ended if it is the last record (nil otherwise). A record already
// read (a follow again after a broken one) gives nothing.
func (t *task) read(raw []byte) ([]Event, *Finished) {
	var r runnerRecord
	if json.Unmarshal(raw, &r) != nil {
		return nil, nil
	}
	if r.Lost != "" {
		return nil, &Finished{Status: StatusLost, ExitCode: -1, Error: r.Lost}
	}
	t.mu.Lock()
	if r.Seq <= t.lastRecord {
		t.mu.Unlock()
		return nil, nil
	}
	t.lastRecord = r.Seq
	rec := t.rec
	t.mu.Unlock()
	var out []Event
	switch {
	case r.Started != nil:
		out = []Event{{Type: TypeStarted, Body: &Started{Agent: rec.Agent, Argv: rec.Argv, Base: rec.Base}}}
	case r.Line != nil:
		out = t.parser.line(r.Stream, *r.Line, r.Cut)
	case r.Flood != nil:
		out = []Event{lineEvent("stderr", "pilot-sandbox: the task writes faster than it can be shown; the rest of its output is in ~/.pilot-tasks/"+rec.ID+"/output in the sandbox", 0)}
	case r.End != nil:
		status := r.End.Status
		if !runnerStatuses[status] {
			status = StatusFailed
		}
		return nil, &Finished{Status: status, ExitCode: r.End.ExitCode, DurationMs: r.End.DurationMs, DroppedLines: r.End.DroppedLines}
	}
	for i := range out {
		out[i].TimeMs = r.T
	}
	return out, nil
}
