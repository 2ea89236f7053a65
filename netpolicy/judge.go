package netpolicy

import (
	"context"
	"fmt"
	"net/netip"
	"time"
)

// Request is one connection to judge, or, with Port 0, one DNS lookup of
// a type other than A (the shape of egress's Judge contract).
type Request struct {
	Project string // canonical project path
	// Names the sandbox asked for: the DNS name behind a synthetic
	// address first, then the TLS SNI and the HTTP Host when they differ
	// (lower case, no trailing dot); empty for a bare IP.
	Names []string
	// Addr is the address it dialed; the zero Addr for a synthetic one,
	// whose name is Names[0].
	Addr     netip.Addr
	Port     int
	Protocol string   // "tcp" or "udp"
	Process  *Process // a hint, may be nil
	Cause    *Cause   // a hint, may be nil
	// Learn, when set, looks up Process and Cause: the judge calls it
	// once, before it asks the user, so a connection the policy decides
	// never waits for it.
	Learn func(context.Context) (*Process, *Cause)
}

// Process is the program that opened a connection, as learned from inside
// the sandbox: a hint, never used to decide.
type Process struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

// Cause is what led to a connection, where it can be known: a hint,
// never used to decide.
type Cause struct {
	Tool      string `json:"tool,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Exec      string `json:"exec,omitempty"`
	Task      string `json:"task,omitempty"`
	Browser   string `json:"browser,omitempty"`
}

// Decision is the Judge's answer. An Allow of a connection always has at
// least one address to dial.
type Decision struct {
	Allow bool
	// Dial are the checked addresses, in order of preference; the
	// connection must be made to one of them, never to a name.
	Dial   []netip.Addr
	By     string // ByRule, ByPreset, ByUser, ByTimeout or ByFixed
	Rule   string // the rule that decided, if one did
	Reason string // one line for the agent: what was blocked and how to ask
}

// Who decided.
const (
	ByRule    = "rule"
	ByPreset  = "preset"
	ByUser    = "user"
	ByTimeout = "timeout" // no answer: none in time, no one to ask, too many questions
	ByFixed   = "fixed"
)

// Layers are where a project's policy comes from. Each is asked at every
// connection, so each must be cheap (a file is read again only when it
// changed).
type Layers interface {
	// User is the user's policy, or why it cannot be used.
	User() (Config, error)
	// Repository is the project's own policy and whether the user
	// approved exactly its widening.
	Repository(project string) (Repository, bool, error)
	// Kept are the user's kept and session decisions for the project.
	Kept(project string) []Kept
	// HostAddrs are the host's own addresses for the project's sandbox:
	// its network's gateway, and the host's interfaces when the engine
	// is local.
	HostAddrs(project string) []netip.Addr
}

// Resolver resolves a name on the host; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Asker puts a question to the user and waits for the answer until ctx
// ends; package permission's flow is one.
type Asker interface {
	Ask(ctx context.Context, q Question) Answer
}

// Question is a destination the policy asks the user about.
type Question struct {
	Project string
	// Rule is what an answer "always" or "for the session" keeps: the
	// host (or address) and port asked about.
	Rule     Rule
	Host     string // the name or address asked about
	Port     int
	Protocol string
	// SNI is the TLS server name the connection gave, when it differs
	// from Host.
	SNI     string
	Process *Process
	Cause   *Cause
	// Timeout is how long the question waits for an answer.
	Timeout time.Duration
	// Summary says in plain words what is asked.
	Summary string
	// Settled says whether the policy now decides the question without
	// the user's answer (the user changed it meanwhile, e.g. with
	// pilot-sandbox net allow), and how; an asker asks it while the
	// question waits.
	Settled func() (Answer, bool)
}

// Answer is the user's answer, or the lack of one, or the policy's word
// once it settled the question.
type Answer struct {
	Allow  bool
	By     string // ByUser; ByTimeout when no one answered; ByRule, ByPreset or ByFixed when the policy settled it
	Rule   string // the rule that settled it, if one did
	Reason string // the user's reason, why no one answered, or the policy's denial
}

// Judge decides connections by the policy in force.
type Judge struct {
	layers Layers
	asker  Asker
	dns    *dnsCache
}

// NewJudge returns a Judge that reads the policy from layers, resolves
// names with resolver (its answers kept briefly) and asks through asker.
func NewJudge(layers Layers, resolver Resolver, asker Asker) *Judge {
	return &Judge{layers: layers, asker: asker, dns: newDNSCache(resolver)}
}

// Policy is the policy in force for the project.
func (j *Judge) Policy(project string) (*Policy, error) {
	user, err := j.layers.User()
	if err != nil {
		return nil, err
	}
	repo, approved, err := j.layers.Repository(project)
	if err != nil {
		return nil, err
	}
	return Assemble(user, repo, approved, j.layers.Kept(project)), nil
}

// Judge decides one connection (or, with Port 0, one lookup). It blocks
// while the user is asked, until ctx ends.
func (j *Judge) Judge(ctx context.Context, r Request) Decision {
	p, err := j.Policy(r.Project)
	if err != nil {
		return Decision{By: ByFixed, Reason: "no connection is made while the network policy cannot be used: " + err.Error()}
	}
	if p.None {
		return Decision{By: ByFixed, Reason: "this sandbox has no network (network \"none\")"}
	}
	subjects, d, ok := subjectsOf(r)
	if !ok {
		return d
	}
	host := j.layers.HostAddrs(r.Project)
	first, asks, d, ok := judgeAll(p, subjects, r.Port, host)
	if !ok {
		return d
	}
	if r.Port == 0 {
		if len(asks) > 0 {
			return Decision{By: ByPreset, Reason: fmt.Sprintf("%s: a lookup of this type is answered only for a name the policy allows outright", asks[0])}
		}
		return Decision{Allow: true, By: first.by, Rule: first.ruleText()}
	}
	if len(asks) > 0 && r.Learn != nil {
		r.Process, r.Cause = r.Learn(ctx)
	}
	for _, s := range asks {
		q := question(r, s, subjects, p)
		q.Settled = j.settled(r.Project, s, r.Port, host)
		a := j.asker.Ask(ctx, q)
		if !a.Allow {
			return Decision{By: a.By, Rule: a.Rule, Reason: answerReason(s, r.Port, a)}
		}
		first = verdict{outcome: Allow, by: a.By}
		if rule, err := ParseRule(a.Rule); err == nil {
			first.entry = &Entry{Rule: rule}
		}
	}
	dial, d, ok := j.dial(ctx, r, subjects[0], p, host)
	if !ok {
		return d
	}
	return Decision{Allow: true, Dial: dial, By: first.by, Rule: first.ruleText()}
}

// settled is a question's Settled: whether the policy in force now allows
// or denies the subject without asking.
func (j *Judge) settled(project string, s subject, port int, host []netip.Addr) func() (Answer, bool) {
	return func() (Answer, bool) {
		p, err := j.Policy(project)
		if err != nil {
			return Answer{}, false
		}
		v := s.judge(p, port, host)
		switch v.outcome {
		case Allow:
			return Answer{Allow: true, By: v.by, Rule: v.ruleText()}, true
		case Deny:
			return Answer{By: v.by, Rule: v.ruleText(), Reason: denial(s, port, v, p).Reason}, true
		}
		return Answer{}, false
	}
}

// judgeAll judges every subject: the first denial ends it; otherwise it
// returns the first subject's verdict and the subjects to ask about.
func judgeAll(p *Policy, subjects []subject, port int, host []netip.Addr) (first verdict, asks []subject, d Decision, ok bool) {
	if port == smtpPort {
		return verdict{}, nil, Decision{By: ByFixed, Reason: "port 25 (SMTP) is never reachable from a sandbox"}, false
	}
	for i, s := range subjects {
		v := s.judge(p, port, host)
		switch v.outcome {
		case Deny:
			return v, nil, denial(s, port, v, p), false
		case Ask:
			asks = append(asks, s)
		}
		if i == 0 {
			first = v
		}
	}
	return first, asks, Decision{}, true
}

// dial is the addresses a judged connection may go to: the one it dialed,
// or every address of its DNS name (first, the first subject), all of
// which must pass: a name that resolves to a denied address is denied.
func (j *Judge) dial(ctx context.Context, r Request, first subject, p *Policy, host []netip.Addr) ([]netip.Addr, Decision, bool) {
	if r.Addr.IsValid() {
		return []netip.Addr{r.Addr}, Decision{}, true
	}
	name := first.name
	addrs, err := j.dns.lookup(ctx, name)
	if err != nil {
		return nil, Decision{By: ByFixed, Reason: fmt.Sprintf("%s does not resolve: %v", name, err)}, false
	}
	for _, a := range addrs {
		if v, denied := p.addrDenied(plain(a), r.Port, host); denied {
			return nil, resolvedDenial(name, a, r.Port, v, p), false
		}
	}
	return addrs, Decision{}, true
}

// ruleText is the rule that decided, or "".
func (v verdict) ruleText() string {
	if v.entry == nil {
		return ""
	}
	return v.entry.Rule.String()
}
