package permission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

const project = "/home/me/app"

// recorder is a listener that keeps what it hears.
type recorder struct {
	mu     sync.Mutex // guards events
	events []Event
}

func (r *recorder) hear(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) asked() []Question {
	r.mu.Lock()
	defer r.mu.Unlock()
	var qs []Question
	for _, e := range r.events {
		if e.Asked != nil {
			qs = append(qs, *e.Asked)
		}
	}
	return qs
}

func (r *recorder) resolved() []Resolved {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rs []Resolved
	for _, e := range r.events {
		if e.Resolved != nil {
			rs = append(rs, *e.Resolved)
		}
	}
	return rs
}

// newBroker is a Broker keeping decisions in a fresh state directory,
// with a listener on the project.
func newBroker(t *testing.T) (*Broker, *recorder, string) {
	state := t.TempDir()
	b := New(projectfs.NewDecisions(state))
	rec := &recorder{}
	b.Listen(project, rec.hear)
	return b, rec, state
}

func request(rule string) Request {
	return Request{Project: project, Kind: KindNetwork, Rule: rule, Summary: "connect to " + rule,
		Detail: map[string]any{"host": rule}, Timeout: 60 * time.Second}
}

// ask runs Ask in the background; the answer arrives on the channel.
func ask(b *Broker, ctx context.Context, r Request) <-chan Answer {
	out := make(chan Answer, 1)
	go func() { out <- b.Ask(ctx, r) }()
	return out
}

// waiting says whether an answer is still not there.
func waiting(ch <-chan Answer) bool {
	select {
	case a := <-ch:
		panic(fmt.Sprintf("answered: %+v", a))
	default:
		return true
	}
}

func TestAskAndAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, rec, _ := newBroker(t)
		start := time.Now()
		got := ask(b, context.Background(), request("example.org:443"))
		synctest.Wait()
		qs := rec.asked()
		if len(qs) != 1 {
			t.Fatalf("asked %+v, want one question", qs)
		}
		q := qs[0]
		if q.Project != project || q.Kind != KindNetwork || q.Rule != "example.org:443" || q.ExpiresAt != start.Add(60*time.Second).UnixMilli() || q.ID == "" {
			t.Errorf("question = %+v", q)
		}
		waiting(got)
		if err := b.Answer(q.ID, Answer{Decision: AllowOnce}); err != nil {
			t.Fatal(err)
		}
		if a := <-got; a.Decision != AllowOnce || a.By != ByUser || !a.Allowed() {
			t.Errorf("answer = %+v", a)
		}
		if rs := rec.resolved(); len(rs) != 1 || rs[0].ID != q.ID || rs[0].Decision != AllowOnce || rs[0].By != ByUser {
			t.Errorf("resolved = %+v", rs)
		}
		var fe *FieldError
		if err := b.Answer(q.ID, Answer{Decision: AllowOnce}); !errors.As(err, &fe) || fe.Field != "id" {
			t.Errorf("a second answer: %v, want a FieldError on id", err)
		}
		// allow_once keeps nothing: the next request asks again
		again := ask(b, context.Background(), request("example.org:443"))
		synctest.Wait()
		if len(rec.asked()) != 2 {
			t.Errorf("asked %d times, want 2", len(rec.asked()))
		}
		b.Answer(rec.asked()[1].ID, Answer{Decision: Deny, Reason: "not now"})
		if a := <-again; a.Allowed() || a.Reason != "not now" || a.By != ByUser {
			t.Errorf("answer = %+v", a)
		}
	})
}

// TestExpiry: a question not answered by its expiry is a deny "no answer",
// given then and not before; its id is unknown afterwards.
func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, rec, _ := newBroker(t)
		r := request("example.org:443")
		r.Timeout = 0 // the default
		got := ask(b, context.Background(), r)
		time.Sleep(DefaultTimeout - time.Millisecond)
		synctest.Wait()
		waiting(got)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		a := <-got
		if a.Allowed() || a.By != ByTimeout || a.Reason != ReasonNoAnswer {
			t.Errorf("answer = %+v", a)
		}
		if err := b.Answer(rec.asked()[0].ID, Answer{Decision: AllowOnce}); err == nil {
			t.Error("an expired question took an answer")
		}
		if rs := rec.resolved(); len(rs) != 1 || rs[0].By != ByTimeout || rs[0].Reason != ReasonNoAnswer {
			t.Errorf("resolved = %+v", rs)
		}
	})
}

// TestIdenticalQuestionsAreOne: ten connections to one unknown host while
// it is asked make one question, all released by its answer; one that
// gives up leaves the others waiting.
func TestIdenticalQuestionsAreOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, rec, _ := newBroker(t)
		var answers []<-chan Answer
		for range 10 {
			answers = append(answers, ask(b, context.Background(), request("example.org:443")))
		}
		quitter, cancel := context.WithCancel(context.Background())
		gaveUp := ask(b, quitter, request("example.org:443"))
		synctest.Wait()
		cancel()
		if a := <-gaveUp; a.Allowed() {
			t.Errorf("a connection that ended: %+v", a)
		}
		if qs := rec.asked(); len(qs) != 1 {
			t.Fatalf("%d questions for one host, want 1", len(qs))
		}
		for _, ch := range answers {
			waiting(ch)
		}
		b.Answer(rec.asked()[0].ID, Answer{Decision: AllowOnce})
		for i, ch := range answers {
			if a := <-ch; a.Decision != AllowOnce {
				t.Errorf("connection %d: %+v", i, a)
			}
		}
	})
}

func TestNoOneToAsk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(projectfs.NewDecisions(t.TempDir()))
		other := &recorder{}
		b.Listen("/home/me/other", other.hear)
		a := b.Ask(context.Background(), request("example.org:443"))
		if a.Allowed() || a.By != ByTimeout || a.Reason != ReasonNoOne {
			t.Errorf("answer = %+v", a)
		}
		if p, _ := b.List(project); len(p) != 0 || len(other.asked()) != 0 {
			t.Errorf("pending %+v, another project heard %+v", p, other.asked())
		}
		everyone := &recorder{}
		stop := b.Listen("", everyone.hear)
		heard := ask(b, context.Background(), request("example.org:443"))
		synctest.Wait()
		if len(everyone.asked()) != 1 {
			t.Errorf("a listener of every project heard %+v", everyone.asked())
		}
		stop()
		if a := b.Ask(context.Background(), request("other.example:443")); a.Reason != ReasonNoOne {
			t.Errorf("after the listener stopped: %+v", a)
		}
		b.Stopped(project)
		<-heard
	})
}

// TestBoundedUnderAFlood: 10,000 connection attempts to new hosts from one
// sandbox make at most MaxPending questions (the rest are denied at once,
// saying why), and 10,000 to one host make one; the broker's memory is
// those questions and nothing per attempt.
func TestBoundedUnderAFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, rec, _ := newBroker(t)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		denied := make(chan Answer, 20000)
		for i := range 10000 {
			wg.Go(func() {
				a := b.Ask(ctx, request(fmt.Sprintf("h%d.example:443", i)))
				denied <- a
			})
			wg.Go(func() { b.Ask(ctx, request("one.example:443")) })
		}
		synctest.Wait()
		b.mu.Lock()
		pending, keys, count := len(b.pending), len(b.byKey), b.count[project]
		b.mu.Unlock()
		if pending != MaxPending || keys != MaxPending || count != MaxPending {
			t.Errorf("pending %d, keys %d, count %d: want %d each", pending, keys, count, MaxPending)
		}
		if n := len(rec.asked()); n != MaxPending {
			t.Errorf("%d questions reached the user, want %d", n, MaxPending)
		}
		if len(denied) < 10000-MaxPending {
			t.Errorf("%d attempts were denied at once, want at least %d", len(denied), 10000-MaxPending)
		}
		if a := <-denied; a.Allowed() || a.By != ByTimeout || a.Reason == "" {
			t.Errorf("a denial past the bound: %+v", a)
		}
		cancel()
		wg.Wait()
		time.Sleep(DefaultTimeout)
		synctest.Wait()
		if p, _ := b.List(project); len(p) != 0 {
			t.Errorf("after the expiry %d questions wait", len(p))
		}
	})
}

// TestSessionDecisionsLastUntilTheSandboxStops.
func TestSessionDecisionsLastUntilTheSandboxStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, rec, _ := newBroker(t)
		got := ask(b, context.Background(), request("example.org:443"))
		synctest.Wait()
		b.Answer(rec.asked()[0].ID, Answer{Decision: AllowSession})
		<-got
		if a := b.Ask(context.Background(), request("example.org:443")); a.Decision != AllowSession {
			t.Errorf("the same request in the session: %+v", a)
		}
		rules, _ := b.Decisions(project)
		if len(rules) != 1 || rules[0].Source != SourceSession || !rules[0].Allow() {
			t.Errorf("decisions = %+v", rules)
		}
		// a question waiting when the sandbox stops is denied
		waiter := ask(b, context.Background(), request("other.example:443"))
		synctest.Wait()
		b.Stopped(project)
		if a := <-waiter; a.Allowed() || a.Reason != ReasonStopped {
			t.Errorf("a question when the sandbox stopped: %+v", a)
		}
		if rules, _ := b.Decisions(project); len(rules) != 0 {
			t.Errorf("after the stop: %+v", rules)
		}
		again := ask(b, context.Background(), request("example.org:443"))
		synctest.Wait()
		waiting(again)
		b.Stopped(project)
		<-again
	})
}

// TestKeptDecisionsSurviveARestart: allow_always and an always deny are
// kept in the user's state; a new Broker (a restarted sidecar) answers by
// them, and has none of the old one's pending questions.
func TestKeptDecisionsSurviveARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, rec, state := newBroker(t)
		allow := ask(b, context.Background(), request("example.org:443"))
		deny := ask(b, context.Background(), request("tracker.example:443"))
		once := ask(b, context.Background(), request("once.example:443"))
		left := ask(b, context.Background(), request("left.example:443"))
		synctest.Wait()
		ids := map[string]string{}
		for _, q := range rec.asked() {
			ids[q.Rule] = q.ID
		}
		b.Answer(ids["example.org:443"], Answer{Decision: AllowAlways})
		b.Answer(ids["tracker.example:443"], Answer{Decision: Deny, Always: true, Reason: "a tracker"})
		b.Answer(ids["once.example:443"], Answer{Decision: Deny})
		<-allow
		<-deny
		<-once
		waiting(left)

		restarted := New(projectfs.NewDecisions(state))
		restarted.Listen(project, (&recorder{}).hear)
		if a := restarted.Ask(context.Background(), request("example.org:443")); a.Decision != AllowAlways || a.By != ByUser {
			t.Errorf("a kept allow after a restart: %+v", a)
		}
		if a := restarted.Ask(context.Background(), request("tracker.example:443")); a.Allowed() || a.Reason != "a tracker" || !a.Always {
			t.Errorf("a kept deny after a restart: %+v", a)
		}
		if p, rules := restarted.List(project); len(p) != 0 || len(rules) != 2 {
			t.Errorf("after a restart: pending %+v, rules %+v", p, rules)
		}
		var fe *FieldError
		if err := restarted.Answer(ids["left.example:443"], Answer{Decision: AllowOnce}); !errors.As(err, &fe) || fe.Field != "id" {
			t.Errorf("an id of the process before: %v", err)
		}
		b.Stopped(project)
		<-left
	})
}

// TestForget removes a kept decision (made by another process too), and
// says which there are when the rule is none of them.
func TestForget(t *testing.T) {
	b, _, state := newBroker(t)
	other := New(projectfs.NewDecisions(state)) // another process of the user
	other.keep(project, Rule{Kind: KindNetwork, Rule: "example.org:443", Decision: "allow", DecidedAt: 1})
	if rules, _ := b.Decisions(project); len(rules) != 1 {
		t.Fatalf("a decision kept by another process is not seen: %+v", rules)
	}
	var fe *FieldError
	if _, err := b.Forget(project, "nope.example"); !errors.As(err, &fe) || fe.Field != "rule" {
		t.Errorf("forget an unknown rule: %v", err)
	} else if want := `"nope.example" is no decision of this project (kept: example.org:443)`; fe.Reason != want {
		t.Errorf("reason = %q, want %q", fe.Reason, want)
	}
	if n, err := b.Forget(project, "example.org:443"); n != 1 || err != nil {
		t.Errorf("forget = %d, %v", n, err)
	}
	if rules, _ := other.Decisions(project); len(rules) != 0 {
		t.Errorf("the other process still sees %+v", rules)
	}
}

func TestAnswerRefusesBadAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, rec, _ := newBroker(t)
		got := ask(b, context.Background(), request("example.org:443"))
		synctest.Wait()
		id := rec.asked()[0].ID
		for _, tc := range []struct {
			a     Answer
			field string
		}{
			{Answer{Decision: "allow"}, "decision"},
			{Answer{Decision: ""}, "decision"},
			{Answer{Decision: AllowOnce, Always: true}, "always"},
			{Answer{Decision: Deny, Reason: string(make([]byte, maxReason+1))}, "reason"},
			{Answer{Decision: Deny, Reason: "\xff"}, "reason"},
		} {
			var fe *FieldError
			if err := b.Answer(id, tc.a); !errors.As(err, &fe) || fe.Field != tc.field {
				t.Errorf("Answer(%+v) = %v, want a FieldError on %s", tc.a, err, tc.field)
			}
		}
		waiting(got)
		b.Answer(id, Answer{Decision: AllowOnce})
		<-got
	})
}

func TestAllowAlwaysWithoutAStateDirectory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(projectfs.NewDecisions(""))
		rec := &recorder{}
		b.Listen(project, rec.hear)
		got := ask(b, context.Background(), request("example.org:443"))
		synctest.Wait()
		id := rec.asked()[0].ID
		if err := b.Answer(id, Answer{Decision: AllowAlways}); !errors.Is(err, projectfs.ErrNoState) {
			t.Errorf("allow_always without a state directory: %v", err)
		}
		waiting(got)
		b.Answer(id, Answer{Decision: AllowSession})
		if a := <-got; a.Decision != AllowSession {
			t.Errorf("answer = %+v", a)
		}
	})
}

// TestSettledElsewhere: a question whose matter the user settles outside
// it (a rule written with pilot-sandbox net allow) ends with that, within
// SettleEvery, for everything that waited on it.
func TestSettledElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, rec, _ := newBroker(t)
		var mu sync.Mutex
		allowed := false
		r := request("example.org:443")
		r.Settled = func() (Answer, bool) {
			mu.Lock()
			defer mu.Unlock()
			return Answer{Decision: AllowOnce, By: "rule"}, allowed
		}
		first, second := ask(b, context.Background(), r), ask(b, context.Background(), r)
		time.Sleep(3 * SettleEvery)
		synctest.Wait()
		waiting(first)
		mu.Lock()
		allowed = true
		mu.Unlock()
		time.Sleep(SettleEvery)
		synctest.Wait()
		for _, ch := range []<-chan Answer{first, second} {
			if a := <-ch; a.Decision != AllowOnce || a.By != "rule" {
				t.Errorf("answer = %+v", a)
			}
		}
		if rs := rec.resolved(); len(rs) != 1 || rs[0].By != "rule" {
			t.Errorf("resolved = %+v", rs)
		}
	})
}
