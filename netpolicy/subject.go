package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
)

// subject is one thing a connection is judged as: the address it dialed,
// or one of the names it asked for. Every subject must be allowed: a TLS
// SNI that differs from the DNS name (domain fronting) is judged too.
type subject struct {
	name string
	addr netip.Addr // valid for an address
}

func (s subject) String() string {
	if s.addr.IsValid() {
		return s.addr.String()
	}
	return s.name
}

func (s subject) judge(p *Policy, port int, host []netip.Addr) verdict {
	if s.addr.IsValid() {
		return p.judgeAddr(s.addr, port, host)
	}
	return p.judgeName(s.name, port)
}

// maxNames bounds the names of one request: the DNS name, the SNI and the
// HTTP Host.
const maxNames = 4

// subjectsOf checks a request from the sandbox and returns what it is
// judged as, or the denial of a request that makes no sense.
func subjectsOf(r Request) ([]subject, Decision, bool) {
	bad := func(format string, args ...any) ([]subject, Decision, bool) {
		return nil, Decision{By: ByFixed, Reason: fmt.Sprintf(format, args...)}, false
	}
	switch {
	case r.Protocol != "tcp" && r.Protocol != "udp":
		return bad("the protocol %q is neither tcp nor udp", clip(r.Protocol))
	case r.Port < 0 || r.Port > 65535:
		return bad("the port %d is not a port", r.Port)
	case len(r.Names) > maxNames:
		return bad("the connection names %d hosts; at most %d are judged", len(r.Names), maxNames)
	case !r.Addr.IsValid() && len(r.Names) == 0:
		return bad("the connection names no host and no address")
	case r.Port == 0 && len(r.Names) == 0:
		return bad("a lookup names no host")
	}
	var subjects []subject
	if r.Addr.IsValid() {
		subjects = append(subjects, subject{addr: plain(r.Addr)})
	}
	for _, n := range r.Names {
		name, err := CheckName(n)
		if err != nil {
			return bad("the host name %v", err)
		}
		if !slices.Contains(subjects, subject{name: name}) {
			subjects = append(subjects, subject{name: name})
		}
	}
	return subjects, Decision{}, true
}

// destination is what the agent reads: "example.org:443", "[2001:db8::1]:22".
func destination(s subject, port int) string {
	if port == 0 {
		return s.String()
	}
	if s.addr.Is6() {
		return "[" + s.String() + "]:" + strconv.Itoa(port)
	}
	return s.String() + ":" + strconv.Itoa(port)
}

// howToAllow says how the user allows what was blocked.
func howToAllow(rule string) string {
	return fmt.Sprintf("the user can allow it with `pilot-sandbox net allow %s` or in the app's panel", rule)
}

// denial is the Decision for a subject the policy denies.
func denial(s subject, port int, v verdict, p *Policy) Decision {
	dest := destination(s, port)
	d := Decision{By: v.by, Rule: v.ruleText()}
	switch {
	case v.by == ByFixed:
		d.Reason = fmt.Sprintf("%s is never reachable from a sandbox: %s", dest, v.why)
	case v.entry != nil:
		d.Reason = fmt.Sprintf("%s is denied by %s", dest, v.entry.describe())
	case v.why != "":
		d.Reason = fmt.Sprintf("%s is a private address (%s), denied unless an allow names that IP or CIDR: %s", dest, v.why, howToAllow(dest))
	default:
		d.Reason = fmt.Sprintf("%s is not allowed under the preset %q, which asks nothing: %s", dest, p.Preset.Name, howToAllow(dest))
	}
	return d
}

// resolvedDenial is the Decision for a name that resolves to a denied
// address.
func resolvedDenial(name string, a netip.Addr, port int, v verdict, p *Policy) Decision {
	d := denial(subject{addr: plain(a)}, port, v, p)
	d.Reason = fmt.Sprintf("%s resolves to %s, which is denied: %s", name, a, d.Reason)
	return d
}

// describe says which rule an entry is and where it came from.
func (e *Entry) describe() string {
	switch e.Source {
	case SourceConfig:
		return fmt.Sprintf("the rule %s in the user's config.json (network.deny)", e.Rule)
	case SourceRepository:
		return fmt.Sprintf("the rule %s in the project's .pilot/settings.json (sandbox.network.deny)", e.Rule)
	case SourceSession:
		return fmt.Sprintf("the user's answer for this session (%s)", e.Rule)
	}
	reason := ""
	if e.Kept != nil && e.Kept.Reason != "" {
		reason = fmt.Sprintf(" saying %q", clip(e.Kept.Reason))
	}
	return fmt.Sprintf("the user's kept decision %s%s (`pilot-sandbox net forget %s` removes it)", e.Rule, reason, e.Rule)
}

// answerReason says why an asked connection was not made.
func answerReason(s subject, port int, a Answer) string {
	dest := destination(s, port)
	switch {
	case a.By == ByUser && a.Reason != "":
		return fmt.Sprintf("the user denied %s, saying %q", dest, clip(a.Reason))
	case a.By == ByUser:
		return fmt.Sprintf("the user denied %s", dest)
	case a.By == ByTimeout:
		return fmt.Sprintf("%s was not allowed: %s; %s", dest, a.Reason, howToAllow(dest))
	}
	return a.Reason // the policy's own denial, settled while the question waited
}

// question is what the user is asked about one subject of r.
func question(r Request, s subject, subjects []subject, p *Policy) Question {
	q := Question{
		Project: r.Project, Host: s.String(), Port: r.Port, Protocol: r.Protocol,
		Process: r.Process, Cause: r.Cause, Timeout: p.AskTimeout,
		Rule: Rule{host: s.name, port: r.Port},
	}
	if s.addr.IsValid() {
		q.Rule = Rule{prefix: netip.PrefixFrom(s.addr, s.addr.BitLen()), port: r.Port}
	}
	for _, o := range subjects {
		if o.name != "" && o != s && q.SNI == "" {
			q.SNI = o.name
		}
	}
	q.Summary = fmt.Sprintf("connect to %s (%s)", destination(s, r.Port), r.Protocol)
	if r.Process != nil && r.Process.Command != "" {
		q.Summary += fmt.Sprintf(" from `%s`", clip(r.Process.Command))
	}
	return q
}
