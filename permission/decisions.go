package permission

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Rule is a decision that answers its question without asking: kept
// ("always", in the user's state) or made for the session.
type Rule struct {
	Kind      string `json:"kind"`
	Rule      string `json:"rule"`
	Decision  string `json:"decision"` // "allow" or "deny"
	Source    string `json:"source"`   // SourceKept or SourceSession
	Reason    string `json:"reason,omitempty"`
	DecidedAt int64  `json:"decidedAt"`
}

// Where a decision is kept.
const (
	SourceKept    = "kept"
	SourceSession = "session"
)

// Allow says whether the decision allows.
func (r Rule) Allow() bool { return r.Decision == "allow" }

// FieldError is a bad argument of an answer or a forget, naming it.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Reason }

// snapshot is a project's decisions as last read; a change of the kept
// file (by any process) or of the session's decisions makes a new one.
type snapshot struct {
	stamp   projectfs.Stamp
	rules   []Rule
	version uint64
}

// Decisions are the project's kept decisions, then its session ones, and
// a version that changes whenever they do (so a caller may keep what it
// derived from them). It is called at every connection: the kept file is
// read again only when its stamp changed.
func (b *Broker) Decisions(project string) ([]Rule, uint64) {
	stamp := b.store.Stamp(project)
	b.mu.Lock()
	if s, ok := b.snaps[project]; ok && s.stamp == stamp {
		b.mu.Unlock()
		return s.rules, s.version
	}
	b.mu.Unlock()
	// A file that cannot be read keeps nothing: every question is asked
	// again, which is safe; the next write sets the file aside.
	kept, _ := b.store.Read(project)
	rules := make([]Rule, 0, len(kept))
	for _, d := range kept {
		rules = append(rules, Rule{Kind: d.Kind, Rule: d.Rule, Decision: allowWord(d.Allow), Source: SourceKept, Reason: d.Reason, DecidedAt: d.DecidedAt})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	rules = append(rules, b.session[project]...)
	b.gen++
	b.snaps[project] = snapshot{stamp: stamp, rules: rules, version: b.gen}
	return rules, b.gen
}

func allowWord(allow bool) string {
	if allow {
		return "allow"
	}
	return "deny"
}

// decided is the answer a kept or session decision gives the request.
func (b *Broker) decided(r Request) (Answer, bool) {
	rules, _ := b.Decisions(r.Project)
	for _, d := range rules {
		if d.Kind != r.Kind || d.Rule != r.Rule {
			continue
		}
		a := Answer{Decision: Deny, Always: d.Source == SourceKept, By: ByUser, Reason: d.Reason}
		switch {
		case d.Allow() && d.Source == SourceKept:
			a.Decision = AllowAlways
		case d.Allow():
			a.Decision = AllowSession
		}
		return a, true
	}
	return Answer{}, false
}

// Answer answers the waiting question id: every request it stands for
// gets the answer; allow_session keeps it until the sandbox stops,
// allow_always and an Always deny keep it in the user's state. An
// unknown or expired id, or a bad answer, is a FieldError and changes
// nothing.
func (b *Broker) Answer(id string, a Answer) error {
	if err := checkAnswer(a); err != nil {
		return err
	}
	b.mu.Lock()
	p, ok := b.pending[id]
	b.mu.Unlock()
	if !ok {
		return &FieldError{Field: "id", Reason: fmt.Sprintf("%q is no question waiting for an answer: unknown, answered already, or expired", clip(id))}
	}
	a.By = ByUser
	rule := Rule{Kind: p.q.Kind, Rule: p.q.Rule, Decision: allowWord(a.Allowed()), Reason: a.Reason, DecidedAt: b.now().UnixMilli()}
	switch {
	case a.Decision == AllowAlways || a.Always:
		rule.Source = SourceKept
		if err := b.keep(p.q.Project, rule); err != nil {
			return err
		}
	case a.Decision == AllowSession:
		rule.Source = SourceSession
		b.mu.Lock()
		b.session[p.q.Project] = append(withoutRule(b.session[p.q.Project], rule.Rule), rule)
		delete(b.snaps, p.q.Project)
		b.mu.Unlock()
	}
	b.resolve(id, a) // a question that expired meanwhile keeps what was decided
	return nil
}

func checkAnswer(a Answer) error {
	switch {
	case !slices.Contains([]string{AllowOnce, AllowSession, AllowAlways, Deny}, a.Decision):
		return &FieldError{Field: "decision", Reason: fmt.Sprintf("must be allow_once, allow_session, allow_always or deny; it is %q", clip(a.Decision))}
	case a.Always && a.Decision != Deny:
		return &FieldError{Field: "always", Reason: "goes with deny only (allow_always keeps an allow)"}
	case len(a.Reason) > maxReason || !utf8.ValidString(a.Reason):
		return &FieldError{Field: "reason", Reason: fmt.Sprintf("must be valid UTF-8 of at most %d bytes", maxReason)}
	}
	return nil
}

// keep writes a kept decision, replacing one of the same kind and rule.
func (b *Broker) keep(project string, r Rule) error {
	if !b.store.Kept() {
		return fmt.Errorf("keep the decision: %w", projectfs.ErrNoState)
	}
	err := b.store.Change(project, func(list []projectfs.Decision) ([]projectfs.Decision, error) {
		list = slices.DeleteFunc(list, func(d projectfs.Decision) bool { return d.Kind == r.Kind && d.Rule == r.Rule })
		return append(list, projectfs.Decision{Kind: r.Kind, Rule: r.Rule, Allow: r.Allow(), Reason: r.Reason, DecidedAt: r.DecidedAt}), nil
	})
	if err != nil {
		return fmt.Errorf("keep the decision: %w", err)
	}
	b.mu.Lock()
	delete(b.snaps, project)
	b.mu.Unlock()
	return nil
}

func withoutRule(rules []Rule, rule string) []Rule {
	return slices.DeleteFunc(slices.Clone(rules), func(r Rule) bool { return r.Rule == rule })
}

// Forget removes the project's kept and session decisions for rule, of
// any kind, and says how many there were; none is a FieldError.
func (b *Broker) Forget(project, rule string) (int, error) {
	removed := 0
	err := b.store.Change(project, func(list []projectfs.Decision) ([]projectfs.Decision, error) {
		n := len(list)
		list = slices.DeleteFunc(list, func(d projectfs.Decision) bool { return d.Rule == rule })
		removed = n - len(list)
		return list, nil
	})
	if err != nil {
		return 0, fmt.Errorf("forget the decision: %w", err)
	}
	b.mu.Lock()
	n := len(b.session[project])
	b.session[project] = withoutRule(b.session[project], rule)
	removed += n - len(b.session[project])
	delete(b.snaps, project)
	b.mu.Unlock()
	if removed == 0 {
		rules, _ := b.Decisions(project)
		names := make([]string, 0, len(rules))
		for _, r := range rules {
			names = append(names, r.Rule)
		}
		kept := "none are kept"
		if len(names) > 0 {
			kept = "kept: " + strings.Join(names[:min(len(names), 10)], ", ")
		}
		return 0, &FieldError{Field: "rule", Reason: fmt.Sprintf("%q is no decision of this project (%s)", clip(rule), kept)}
	}
	return removed, nil
}

// List is what waits for the project's answers, soonest to expire first,
// and its kept and session decisions.
func (b *Broker) List(project string) ([]Question, []Rule) {
	rules, _ := b.Decisions(project)
	b.mu.Lock()
	var pending []Question
	for _, p := range b.pending {
		if p.q.Project == project {
			pending = append(pending, p.q)
		}
	}
	b.mu.Unlock()
	slices.SortFunc(pending, func(a, b Question) int { return cmp.Compare(a.ExpiresAt, b.ExpiresAt) })
	return pending, slices.Clone(rules)
}

// Stopped is told that the project's sandbox stopped: its session
// decisions end, and its waiting questions are denied (what waited on
// them is gone with the sandbox).
func (b *Broker) Stopped(project string) {
	b.mu.Lock()
	delete(b.session, project)
	delete(b.snaps, project)
	var ids []string
	for id, p := range b.pending {
		if p.q.Project == project {
			ids = append(ids, id)
		}
	}
	b.mu.Unlock()
	for _, id := range ids {
		b.resolve(id, Answer{Decision: Deny, By: ByTimeout, Reason: ReasonStopped})
	}
}

// clip shortens what a client sent for an error message.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "..."
}
