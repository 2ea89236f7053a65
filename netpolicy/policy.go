package netpolicy

import (
	"net/netip"
	"time"
)

// Outcome is what a policy says of one destination.
type Outcome int

// Outcomes.
const (
	Allow Outcome = iota + 1
	Ask
	Deny
)

func (o Outcome) String() string {
	switch o {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return "none"
}

// Sources: where a part of the policy in force came from.
const (
	SourceConfig     = "config"     // the user's config.json
	SourceRepository = "repository" // the project's .pilot/settings.json
	SourceKept       = "kept"       // the user's answer "always", kept in the user's state
	SourceSession    = "session"    // the user's answer "for the session", until the sandbox stops
	SourcePreset     = "preset"     // the preset's own list
	SourceDefault    = "default"    // nothing names it: the default
)

// Kept is a decision of the user that acts as a rule: an answer "always"
// (kept per project in the user's state) or "for the session".
type Kept struct {
	Rule      Rule
	Allow     bool
	Session   bool
	Reason    string
	DecidedAt time.Time
}

// Entry is one rule of the policy in force and where it came from.
type Entry struct {
	Rule   Rule
	Source string
	// Kept is the decision behind a kept or session entry.
	Kept *Kept
}

// part is one source's rules in one list of the policy: a list of rules
// from a file, or the user's kept (or session) decisions of one outcome.
// The policy refers to its layers' lists and copies none, since it is
// assembled at every connection.
type part struct {
	source string
	rules  []Rule
	kept   []Kept // for SourceKept and SourceSession: those with Allow == allow
	allow  bool
}

// find returns the first entry of the part whose rule match accepts.
func (pt *part) find(match func(*Rule) bool) (Entry, bool) {
	for i := range pt.rules {
		if match(&pt.rules[i]) {
			return Entry{Rule: pt.rules[i], Source: pt.source}, true
		}
	}
	for i := range pt.kept {
		if k := &pt.kept[i]; pt.holds(k) && match(&k.Rule) {
			return Entry{Rule: k.Rule, Source: pt.source, Kept: k}, true
		}
	}
	return Entry{}, false
}

// holds says whether a kept decision belongs to the part.
func (pt *part) holds(k *Kept) bool {
	return k.Allow == pt.allow && k.Session == (pt.source == SourceSession)
}

// Policy is the network policy in force for one sandbox: the user's
// config, what its repository narrows (and widens, once approved) and the
// user's kept and session decisions, in the order of judgement. It is
// immutable once assembled, and shares its layers' lists.
type Policy struct {
	None         bool
	Preset       *Preset
	PresetSource string
	AskTimeout   time.Duration
	// Repository is the repository's widening, applied when Approved.
	Repository Widening
	Approved   bool
	deny       [4]part
	allow      [4]part
	ask        [2]part
}

// preset is the user's preset, the default when the config names none.
func (c Config) preset() *Preset {
	if p := presetNamed(c.Preset); p != nil {
		return p
	}
	return presetNamed(DefaultPreset)
}

// Assemble is the policy in force: the user's config, the repository's
// part (its widening only when approved says the user approved exactly
// it), and the user's kept and session decisions.
func Assemble(user Config, repo Repository, approved bool, kept []Kept) *Policy {
	p := &Policy{
		None:         user.None || repo.None,
		Preset:       user.preset(),
		PresetSource: SourceConfig,
		AskTimeout:   user.AskTimeout,
		Repository:   repo.Widens(user),
		Approved:     approved,
	}
	if user.Preset == "" {
		p.PresetSource = SourceDefault
	}
	if p.AskTimeout == 0 {
		p.AskTimeout = DefaultAskTimeout
	}
	if rp := presetNamed(repo.Preset); rp != nil && (rp.stricter(p.Preset) || approved) {
		p.Preset, p.PresetSource = rp, SourceRepository
	}
	p.deny = [...]part{{source: SourceConfig, rules: user.Deny}, {source: SourceRepository, rules: repo.Deny},
		{source: SourceKept, kept: kept}, {source: SourceSession, kept: kept}}
	p.allow = [...]part{{source: SourceConfig, rules: user.Allow}, {source: SourceRepository, rules: repo.Allow},
		{source: SourceKept, kept: kept, allow: true}, {source: SourceSession, kept: kept, allow: true}}
	p.ask = [...]part{{source: SourceConfig, rules: user.Ask}, {source: SourceRepository, rules: repo.Ask}}
	if !approved {
		p.allow[1].rules, p.ask[1].rules = nil, nil
	}
	return p
}

// Entries are the policy's rules of one list (Deny, Allow or Ask), in
// the order they are judged, each with where it came from.
func (p *Policy) Entries(o Outcome) []Entry {
	var out []Entry
	for _, pt := range p.list(o) {
		for _, r := range pt.rules {
			out = append(out, Entry{Rule: r, Source: pt.source})
		}
		for i := range pt.kept {
			if k := &pt.kept[i]; pt.holds(k) {
				out = append(out, Entry{Rule: k.Rule, Source: pt.source, Kept: k})
			}
		}
	}
	return out
}

func (p *Policy) list(o Outcome) []part {
	switch o {
	case Deny:
		return p.deny[:]
	case Allow:
		return p.allow[:]
	case Ask:
		return p.ask[:]
	}
	return nil
}

// first is the first entry of a list that match accepts.
func (p *Policy) first(o Outcome, match func(*Rule) bool) (Entry, bool) {
	list := p.list(o)
	for i := range list {
		if e, ok := list[i].find(match); ok {
			return e, true
		}
	}
	return Entry{}, false
}

// verdict is the policy's word on one destination, with who decided.
type verdict struct {
	outcome Outcome
	by      string // ByFixed, ByRule, ByPreset, ByUser
	entry   *Entry // the rule that decided, if one did
	why     string // for a fixed or private denial: the range
}

// by is the Decision.By of an entry's source.
func (e *Entry) by() string {
	switch e.Source {
	case SourceKept, SourceSession:
		return ByUser
	case SourcePreset:
		return ByPreset
	}
	return ByRule
}

func decided(o Outcome, e Entry) verdict { return verdict{outcome: o, by: e.by(), entry: &e} }

// judgeName is the policy's word on a name at a port.
func (p *Policy) judgeName(name string, port int) verdict {
	match := func(r *Rule) bool { return r.matchName(name, port) }
	for _, o := range [...]Outcome{Deny, Allow, Ask} {
		if e, ok := p.first(o, match); ok {
			return decided(o, e)
		}
	}
	for i := range p.Preset.Allow {
		if r := &p.Preset.Allow[i]; r.matchName(name, port) {
			return decided(Allow, Entry{Rule: *r, Source: SourcePreset})
		}
	}
	return verdict{outcome: p.Preset.Otherwise, by: ByPreset}
}

// judgeAddr is the policy's word on an address the sandbox dialed
// itself. host are the host's own addresses.
func (p *Policy) judgeAddr(a netip.Addr, port int, host []netip.Addr) verdict {
	if v, denied := p.addrDenied(a, port, host); denied {
		return v
	}
	match := func(r *Rule) bool { return r.matchAddr(a, port) }
	for _, o := range [...]Outcome{Allow, Ask} {
		if e, ok := p.first(o, match); ok {
			return decided(o, e)
		}
	}
	return verdict{outcome: p.Preset.Otherwise, by: ByPreset}
}

// addrDenied says whether an address is denied whatever else allows it:
// a fixed denial, a deny rule, or a private range no allow or ask rule of
// an address lifts. It is all that is judged of the addresses an allowed
// name resolves to.
func (p *Policy) addrDenied(a netip.Addr, port int, host []netip.Addr) (verdict, bool) {
	if why := fixedDenial(a, host); why != "" {
		return verdict{outcome: Deny, by: ByFixed, why: why}, true
	}
	match := func(r *Rule) bool { return r.matchAddr(a, port) }
	if e, ok := p.first(Deny, match); ok {
		return decided(Deny, e), true
	}
	why := privateRange(a)
	if why == "" {
		return verdict{}, false
	}
	for _, o := range [...]Outcome{Allow, Ask} {
		if _, ok := p.first(o, match); ok {
			return verdict{}, false
		}
	}
	return verdict{outcome: Deny, by: ByPreset, why: why}, true
}
