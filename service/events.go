package service

import (
	"sync"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Stages of a start, as reported in Progress.
const (
	StageImage  = "image"
	StageCreate = "create"
	StageStart  = "start"
	StageReady  = "ready"
)

// Progress is a step of a long operation (PROTOCOL.md, sandbox/progress).
type Progress struct {
	ProjectPath string `json:"projectPath"`
	Stage       string `json:"stage"`
	Message     string `json:"message"`
	Current     int    `json:"current,omitempty"`
	Total       int    `json:"total,omitempty"`
}

// EventKind tells the two kinds of Event apart.
type EventKind int

const (
	// EventState: a project's sandbox changed; State is nil when the project
	// has no sandbox any more.
	EventState EventKind = iota
	// EventProgress: a long operation made progress.
	EventProgress
	// EventWarning: a problem with a project's file that a person should
	// hear of (Warning).
	EventWarning
)

// Event is what the manager tells its subscribers.
type Event struct {
	Kind     EventKind
	Project  string
	State    *State
	Progress Progress
	Warning  Warning
}

// subscriberBuffer is how far a subscriber may fall behind before events to it
// are dropped (and logged): a client that stops reading must not stall the
// manager.
const subscriberBuffer = 1024

// broker fans events out to subscribers without blocking the publisher.
type broker struct {
	mu   sync.Mutex // guards subs
	subs map[chan Event]struct{}
}

// subscribe returns a channel of events and the function that ends the
// subscription and closes the channel.
func (b *broker) subscribe() (<-chan Event, func()) {
	ch := make(chan Event, subscriberBuffer)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[chan Event]struct{}{}
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
			close(ch)
		})
	}
}

// publish delivers ev to every subscriber with room for it and reports how
// many it had to skip.
func (b *broker) publish(ev Event) (dropped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
			dropped++
		}
	}
	return dropped
}

// Warning tells a client about a problem it did not ask about but a person
// should know of: a file of the project's found corrupt and set aside at
// startup, or a state file that could not be saved while the sandbox runs
// on (PROTOCOL additions: sandbox/warning).
//
// A warning about the user's own config.json has no project, and one
// about a sandbox's disk use (ProblemDisk) no file.
type Warning struct {
	ProjectPath string                `json:"projectPath,omitempty"`
	File        string                `json:"file,omitempty"`
	Problem     projectfs.FileProblem `json:"problem"`
	KeptAs      string                `json:"keptAs,omitempty"`
	Message     string                `json:"message"`
}
