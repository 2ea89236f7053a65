package permission

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Kinds of question.
const (
	KindNetwork = "network"
	KindExpose  = "expose"
	KindLimits  = "limits"
)

// Decisions a user answers.
const (
	AllowOnce    = "allow_once"
	AllowSession = "allow_session"
	AllowAlways  = "allow_always"
	Deny         = "deny"
)

// Who decided a question.
const (
	ByUser    = "user"
	ByTimeout = "timeout" // no answer: none in time, no one to ask, too many waiting, the sandbox stopped
)

// Bounds.
const (
	// DefaultTimeout is how long a question waits when its asker names no
	// time (config.json's askTimeout).
	DefaultTimeout = 60 * time.Second
	// MaxPending is how many different questions may wait for one
	// sandbox at once; past it a new one is denied at once. A flood of
	// connections to new hosts costs at most this many questions, each
	// held until its answer or expiry.
	MaxPending = 16
	// maxReason bounds a user's reason, which reaches the agent.
	maxReason = 1000
)

// Why no one answered.
const (
	ReasonNoAnswer = "no answer"
	ReasonNoOne    = "no one to ask"
	ReasonStopped  = "the sandbox stopped"
)

// Request is what an asker asks.
type Request struct {
	Project string
	Kind    string
	// Rule is what the question is about, in the asker's words
	// ("example.org:443"): two requests with the same project, kind and
	// rule are one question while it waits, and an answer "always" or
	// "for the session" keeps it.
	Rule    string
	Summary string
	Detail  any
	Cause   any
	// Timeout is how long the question waits; 0 is DefaultTimeout.
	Timeout time.Duration
	// Settled, when set, is asked every SettleEvery while the question
	// waits whether its matter was settled elsewhere (the user changed
	// the policy: pilot-sandbox net allow); an answer it gives resolves
	// the question.
	Settled func() (Answer, bool)
}

// SettleEvery is how often a waiting question's Settled is asked: a
// user who allows a host in a terminal sees the connection go through
// within it.
const SettleEvery = 500 * time.Millisecond

// Question is a request as the user sees it (the sandbox/permission
// notification).
type Question struct {
	ID        string `json:"id"`
	Project   string `json:"projectPath"`
	Kind      string `json:"kind"`
	Rule      string `json:"rule"`
	Summary   string `json:"summary"`
	Detail    any    `json:"detail"`
	Cause     any    `json:"cause,omitempty"`
	ExpiresAt int64  `json:"expiresAt"`
}

// Answer is a user's answer, or the lack of one (By ByTimeout).
type Answer struct {
	Decision string
	Reason   string
	// Always keeps a deny, as allow_always keeps an allow.
	Always bool
	By     string
	// Rule is the asker's rule that settled the question, when its
	// Settled did.
	Rule string
}

// Allowed says whether the answer lets the request through.
func (a Answer) Allowed() bool { return strings.HasPrefix(a.Decision, "allow_") }

// Event is what listeners hear: a question asked, or one resolved
// (answered, expired, or ended with its sandbox).
type Event struct {
	Asked    *Question
	Resolved *Resolved
}

// Resolved says how a question ended.
type Resolved struct {
	ID       string `json:"id"`
	Project  string `json:"projectPath"`
	Decision string `json:"decision"`
	By       string `json:"by"`
	Reason   string `json:"reason,omitempty"`
}

// Broker holds the questions of every sandbox this process carries.
type Broker struct {
	store projectfs.Decisions
	newID func() string
	now   func() time.Time

	mu        sync.Mutex // guards the fields below
	pending   map[string]*pending
	byKey     map[key]*pending
	count     map[string]int    // pending questions per project
	session   map[string][]Rule // decisions for the session, per project
	snaps     map[string]snapshot
	gen       uint64 // numbers the snapshots
	listeners map[*listener]struct{}
}

type key struct{ project, kind, rule string }

// pending is a question waiting; every request it stands for waits on
// done, so a flood of identical requests costs no more than one.
type pending struct {
	q      Question
	key    key
	done   chan struct{} // closed once answer is set
	answer Answer
	timer  *time.Timer
}

type listener struct {
	project string // "" for every project
	fn      func(Event)
}

// Option changes a Broker for a test: the transcripts of rpc's
// conversations need ids and times they can spell.
type Option func(*Broker)

// WithIDs names questions by next instead of at random.
func WithIDs(next func() string) Option { return func(b *Broker) { b.newID = next } }

// WithNow dates questions and decisions by now (their expiry still waits
// the real time).
func WithNow(now func() time.Time) Option { return func(b *Broker) { b.now = now } }

// New returns a Broker that keeps decisions in store.
func New(store projectfs.Decisions, opts ...Option) *Broker {
	b := &Broker{
		store: store, pending: map[string]*pending{}, byKey: map[key]*pending{}, count: map[string]int{},
		session: map[string][]Rule{}, snaps: map[string]snapshot{}, listeners: map[*listener]struct{}{},
		newID: func() string { return "q-" + rand.Text()[:16] }, now: time.Now,
	}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Listen calls fn with every event of the project's questions ("" for
// every project) until stop is called. fn must not block: it is called
// from the asking and answering goroutines, possibly at once. A project
// with no listener has no one to ask: its questions are denied at once.
func (b *Broker) Listen(project string, fn func(Event)) (stop func()) {
	l := &listener{project: project, fn: fn}
	b.mu.Lock()
	b.listeners[l] = struct{}{}
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.listeners, l)
		b.mu.Unlock()
	}
}

// emit calls the listeners of the event's project; b.mu is not held.
func (b *Broker) emit(project string, e Event) {
	b.mu.Lock()
	var fns []func(Event)
	for l := range b.listeners {
		if l.project == "" || l.project == project {
			fns = append(fns, l.fn)
		}
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
}

// listened says whether anyone listens to the project; b.mu is held.
func (b *Broker) listened(project string) bool {
	for l := range b.listeners {
		if l.project == "" || l.project == project {
			return true
		}
	}
	return false
}

// Ask puts the request to the user and waits for the answer, until ctx
// ends (then it returns a deny; the question stays for the others that
// wait on it and for the user's answer, until it expires). A decision
// kept or made for the session answers at once; so does a deny when no
// one listens or MaxPending questions already wait for the project.
func (b *Broker) Ask(ctx context.Context, r Request) Answer {
	if a, ok := b.decided(r); ok {
		return a
	}
	p, asked, refusal := b.enqueue(r)
	if p == nil {
		return Answer{Decision: Deny, By: ByTimeout, Reason: refusal}
	}
	if asked {
		q := p.q
		b.emit(r.Project, Event{Asked: &q})
	}
	select {
	case <-p.done:
		return p.answer
	case <-ctx.Done():
		return Answer{Decision: Deny, By: ByTimeout, Reason: "the connection ended before an answer"}
	}
}

// enqueue joins the request to the identical question waiting, or makes
// a new one (asked). A request that cannot be asked gives no pending and
// the reason.
func (b *Broker) enqueue(r Request) (p *pending, asked bool, refusal string) {
	k := key{r.Project, r.Kind, r.Rule}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.byKey[k]; p != nil {
		return p, false, ""
	}
	if !b.listened(r.Project) {
		return nil, false, ReasonNoOne
	}
	if b.count[r.Project] >= MaxPending {
		return nil, false, fmt.Sprintf("%d questions already wait for this sandbox's answer: answer them first", MaxPending)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	p = &pending{key: k, done: make(chan struct{}), q: Question{
		ID: b.newID(), Project: r.Project, Kind: r.Kind, Rule: r.Rule,
		Summary: r.Summary, Detail: r.Detail, Cause: r.Cause,
		ExpiresAt: b.now().Add(timeout).UnixMilli(),
	}}
	id := p.q.ID
	p.timer = time.AfterFunc(timeout, func() {
		b.resolve(id, Answer{Decision: Deny, By: ByTimeout, Reason: ReasonNoAnswer})
	})
	b.pending[id], b.byKey[k] = p, p
	b.count[r.Project]++
	if r.Settled != nil {
		go b.settle(id, p.done, r.Settled) // ends when the question does
	}
	return p, true, ""
}

// settle resolves a waiting question once settled says its matter was
// decided elsewhere.
func (b *Broker) settle(id string, done <-chan struct{}, settled func() (Answer, bool)) {
	t := time.NewTicker(SettleEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if a, ok := settled(); ok {
			b.resolve(id, a)
			return
		}
	}
}

// resolve ends a waiting question with an answer: every request it
// stands for gets it. It says whether the question was still waiting.
func (b *Broker) resolve(id string, a Answer) bool {
	b.mu.Lock()
	p, ok := b.pending[id]
	if ok {
		b.forgetPending(p)
	}
	b.mu.Unlock()
	if !ok {
		return false
	}
	p.timer.Stop()
	p.answer = a
	close(p.done)
	b.emit(p.q.Project, Event{Resolved: &Resolved{ID: id, Project: p.q.Project, Decision: a.Decision, By: a.By, Reason: a.Reason}})
	return true
}

// forgetPending takes a question out of the maps; b.mu is held.
func (b *Broker) forgetPending(p *pending) {
	delete(b.pending, p.q.ID)
	delete(b.byKey, p.key)
	if b.count[p.q.Project]--; b.count[p.q.Project] == 0 {
		delete(b.count, p.q.Project)
	}
}
