package netpolicy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one entry of a policy's lists:
//
//	example.org          that name, any port
//	*.example.org        every name below example.org (not example.org itself)
//	example.org:443      that name on port 443 (also *.example.org:443)
//	10.1.2.3, 10.1.2.3:22, 2001:db8::1, [2001:db8::1]:22
//	192.168.0.0/16, 10.0.0.0/8:5432, fd00::/8, [fd00::/8]:22
//
// A name rule matches the names the sandbox asked for; an address rule
// matches the address it dialed and every address a name resolves to. Only
// an address rule lifts the denial of a private range. The zero Rule
// matches nothing.
type Rule struct {
	host    string       // normal name (normalName); "" for an address rule
	wild    bool         // *.host
	prefix  netip.Prefix // the address or CIDR of an address rule
	port    int          // 0: every port
	written string       // what the user wrote, when its name was converted from Unicode
}

// maxRuleText bounds a rule as written: a name, a port and some room.
const maxRuleText = maxName + 16

// RuleError is a rule that cannot be used, with what was written.
type RuleError struct {
	Rule   string
	Reason string
}

func (e *RuleError) Error() string { return fmt.Sprintf("%q %s", clip(e.Rule), e.Reason) }

// ParseRule reads a rule as a user or a repository writes it.
func ParseRule(text string) (Rule, error) {
	fail := func(format string, args ...any) (Rule, error) {
		return Rule{}, &RuleError{Rule: text, Reason: fmt.Sprintf(format, args...)}
	}
	if len(text) > 4*maxRuleText {
		return fail("is longer than %d characters", maxRuleText)
	}
	s := strings.TrimSpace(text)
	if reason := badRune(s); reason != "" {
		return fail("%s", reason)
	}
	switch s {
	case "":
		return fail("is empty")
	case "*", "*.*":
		return fail("would match every host: that is what the preset \"open\" does")
	}
	host, port, reason := splitPort(s)
	if reason != "" {
		return fail("%s", reason)
	}
	r, reason := addressRule(host)
	if reason == "" && !r.prefix.IsValid() {
		r, reason = nameRule(host)
	}
	if reason != "" {
		return fail("%s", reason)
	}
	r.port = port
	return r, nil
}

// splitPort separates "HOST:PORT" and "[V6]:PORT"; a bare IPv6 address
// has no port.
func splitPort(s string) (host string, port int, reason string) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, "opens a [ without closing it"
		}
		host, rest := s[1:end], s[end+1:]
		if !strings.Contains(host, ":") {
			return "", 0, "has brackets, which only an IPv6 address takes"
		}
		if rest == "" {
			return host, 0, ""
		}
		if !strings.HasPrefix(rest, ":") {
			return "", 0, "must be [IPv6]:PORT"
		}
		port, reason = parsePort(rest[1:])
		return host, port, reason
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, 0, ""
	case 1:
		host, p, _ := strings.Cut(s, ":")
		port, reason = parsePort(p)
		return host, port, reason
	}
	if _, err := netip.ParsePrefix(s); err == nil {
		return s, 0, ""
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return s, 0, ""
	}
	return "", 0, "is not an IPv6 address; one with a port is written [ADDRESS]:PORT"
}

func parsePort(p string) (int, string) {
	n, err := strconv.Atoi(p)
	if err != nil || !allDigits(p) || p[0] == '0' || n < 1 || n > 65535 {
		return 0, fmt.Sprintf("has the port %q, which is not a number from 1 to 65535", clip(p))
	}
	return n, ""
}

// addressRule reads an IP or a CIDR; a host that is neither gives the
// zero Rule and no reason.
func addressRule(host string) (Rule, string) {
	if strings.Contains(host, "/") {
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return Rule{}, "is not a CIDR such as 10.0.0.0/8 or fd00::/8"
		}
		if p.Addr().Zone() != "" {
			return Rule{}, "has an IPv6 zone, which a rule cannot name"
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		if p.Masked() != p {
			return Rule{}, fmt.Sprintf("has bits set beyond its prefix length: did you mean %s?", p.Masked())
		}
		return Rule{prefix: p}, ""
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		if strings.Contains(host, ":") {
			return Rule{}, "is not an IPv6 address"
		}
		return Rule{}, ""
	}
	if a.Zone() != "" {
		return Rule{}, "has an IPv6 zone, which a rule cannot name"
	}
	a = a.Unmap()
	return Rule{prefix: netip.PrefixFrom(a, a.BitLen())}, ""
}

// nameRule reads "example.org" or "*.example.org".
func nameRule(host string) (Rule, string) {
	r := Rule{}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.wild, host = true, rest
	}
	if strings.Contains(host, "*") {
		return Rule{}, "has a * that is not the whole first label: write *.example.org"
	}
	name, converted, err := normalName(host, true)
	if err != nil {
		return Rule{}, err.Error()
	}
	r.host = name
	if converted {
		r.written = host
		if r.wild {
			r.written = "*." + host
		}
	}
	return r, ""
}

// String is the rule in its one written form: lower case, A-labels,
// IPv6 with a port in brackets.
func (r Rule) String() string {
	var s string
	switch {
	case r.host != "" && r.wild:
		s = "*." + r.host
	case r.host != "":
		s = r.host
	case !r.prefix.IsValid():
		return ""
	case r.prefix.IsSingleIP():
		s = r.prefix.Addr().String()
	default:
		s = r.prefix.String()
	}
	if r.port == 0 {
		return s
	}
	if r.prefix.IsValid() && r.prefix.Addr().Is6() {
		s = "[" + s + "]"
	}
	return s + ":" + strconv.Itoa(r.port)
}

// Written is what the user wrote when it differs from String (a name in
// Unicode, converted to its A-labels), or "".
func (r Rule) Written() string { return r.written }

// IsAddress says whether the rule names an IP or a CIDR.
func (r Rule) IsAddress() bool { return r.prefix.IsValid() }

// Port is the rule's port, 0 for every port.
func (r Rule) Port() int { return r.port }

// matchName says whether the rule covers the name (normal form) on port;
// port 0 (a DNS lookup of another type) matches a rule of any port.
func (r *Rule) matchName(name string, port int) bool {
	if r.host == "" || !r.portOK(port) {
		return false
	}
	if !r.wild {
		return name == r.host
	}
	n := len(name) - len(r.host)
	return n > 1 && name[n-1] == '.' && name[n:] == r.host
}

// matchAddr says whether the rule covers the address on port.
func (r *Rule) matchAddr(a netip.Addr, port int) bool {
	return r.prefix.IsValid() && r.portOK(port) && r.prefix.Contains(a)
}

func (r *Rule) portOK(port int) bool { return r.port == 0 || port == 0 || r.port == port }
