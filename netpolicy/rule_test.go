package netpolicy

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // the rule's one written form
		written string // what Written reports (a converted name)
	}{
		{in: "example.org", want: "example.org"},
		{in: "  Example.ORG. ", want: "example.org"},
		{in: "*.example.org", want: "*.example.org"},
		{in: "*.example.org:443", want: "*.example.org:443"},
		{in: "example.org:22", want: "example.org:22"},
		{in: "_sip._tcp.example.org", want: "_sip._tcp.example.org"},
		{in: "localhost", want: "localhost"},
		{in: "10.1.2.3", want: "10.1.2.3"},
		{in: "10.1.2.3:22", want: "10.1.2.3:22"},
		{in: "192.168.0.0/16", want: "192.168.0.0/16"},
		{in: "10.0.0.0/8:5432", want: "10.0.0.0/8:5432"},
		{in: "2001:db8::1", want: "2001:db8::1"},
		{in: "2001:DB8::1", want: "2001:db8::1"},
		{in: "[2001:db8::1]", want: "2001:db8::1"},
		{in: "[2001:db8::1]:22", want: "[2001:db8::1]:22"},
		{in: "fd00::/8", want: "fd00::/8"},
		{in: "[fd00::/8]:22", want: "[fd00::/8]:22"},
		{in: "::ffff:10.0.0.1", want: "10.0.0.1"},
		{in: "::ffff:10.0.0.0/104", want: "10.0.0.0/8"},
		// U-labels are converted to their A-labels (UTS #46), and say so
		{in: "bücher.de", want: "xn--bcher-kva.de", written: "bücher.de"},
		{in: "BÜCHER.de:443", want: "xn--bcher-kva.de:443", written: "BÜCHER.de"},
		{in: "*.bücher.de", want: "*.xn--bcher-kva.de", written: "*.bücher.de"},
		// the homograph: a Cyrillic а is shown as what it is
		{in: "exаmple.org", want: "xn--exmple-4nf.org", written: "exаmple.org"},
		{in: "xn--bcher-kva.de", want: "xn--bcher-kva.de"},
	} {
		r, err := ParseRule(tc.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tc.in, err)
			continue
		}
		if r.String() != tc.want || r.Written() != tc.written {
			t.Errorf("ParseRule(%q) = %q (written %q), want %q (written %q)", tc.in, r, r.Written(), tc.want, tc.written)
		}
		again, err := ParseRule(r.String())
		if err != nil || again.String() != r.String() {
			t.Errorf("ParseRule(%q) of its own form = %q, %v", r.String(), again, err)
		}
	}
}

func TestParseRuleRefuses(t *testing.T) {
	long := strings.Repeat("a.", 130) + "org" // 263 characters
	for _, tc := range []struct {
		in, reason string
	}{
		{"", "is empty"},
		{"   ", "is empty"},
		{"*", "preset \"open\""},
		{"exa mple.org", "has a space"},
		{"example.org\x00.evil", "NUL"},
		{"exa\tmple.org", "control character"},
		{"a..b", "empty label"},
		{".example.org", "empty label"},
		{"example.org..", "empty label"},
		{long, "longer than 253"},
		{strings.Repeat("x", 5000), "longer than"},
		{strings.Repeat("a", 64) + ".org", "longer than 63"},
		{"-a.org", "hyphen"},
		{"a-.org", "hyphen"},
		{"a!.org", "'!'"},
		{"xn--zz.com", "not a valid A-label"},
		{"xn--a.com", "not a valid A-label"},
		{"1.2.3", "numeric label"},
		{"300.1.1.1", "numeric label"},
		{"example.org:0", "port \"0\""},
		{"example.org:65536", "port \"65536\""},
		{"example.org:080", "port \"080\""},
		{"example.org:+80", "port \"+80\""},
		{"example.org:", "port \"\""},
		{"example.org:https", "port \"https\""},
		{"a:b:c", "is not an IPv6 address"},
		{"10.1.2.3/8", "did you mean 10.0.0.0/8"},
		{"10.0.0.0/33", "not a CIDR"},
		{"a.*.org", "whole first label"},
		{"*example.org", "whole first label"},
		{"**.example.org", "whole first label"},
		{"fe80::1%eth0", "zone"},
		{"[fe80::1%eth0]:22", "zone"},
		{"[10.0.0.1]:22", "only an IPv6 address"},
		{"[::1", "without closing"},
		{"[::1]x", "[IPv6]:PORT"},
		{"a\u200db.com", "internationalised"},
		{"bad\u00a0space.com", "space"},
		{"\xff\xfe.com", "UTF-8"},
	} {
		_, err := ParseRule(tc.in)
		if err == nil {
			t.Errorf("ParseRule(%q) took it", clip(tc.in))
			continue
		}
		if !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("ParseRule(%q): %v, want it to say %q", clip(tc.in), err, tc.reason)
		}
		if len(err.Error()) > 400 {
			t.Errorf("ParseRule(%q): the message is %d bytes long", clip(tc.in), len(err.Error()))
		}
	}
}

func TestRuleMatches(t *testing.T) {
	name := func(rule, n string, port int, want bool) {
		t.Helper()
		if r := mustRule(rule); r.matchName(n, port) != want {
			t.Errorf("%s matches %s port %d: %v", rule, n, port, !want)
		}
	}
	addr := func(rule, a string, port int, want bool) {
		t.Helper()
		if r := mustRule(rule); r.matchAddr(netip.MustParseAddr(a), port) != want {
			t.Errorf("%s matches %s port %d: %v", rule, a, port, !want)
		}
	}
	name("example.org", "example.org", 443, true)
	name("example.org", "www.example.org", 443, false)
	name("example.org", "example.org.evil", 443, false)
	name("*.example.org", "a.example.org", 443, true)
	name("*.example.org", "a.b.example.org", 80, true)
	name("*.example.org", "example.org", 443, false)
	name("*.example.org", "badexample.org", 443, false)
	name("*.example.org", ".example.org", 443, false)
	name("example.org:443", "example.org", 443, true)
	name("example.org:443", "example.org", 80, false)
	name("example.org:443", "example.org", 0, true) // a lookup has no port
	name("10.0.0.0/8", "example.org", 443, false)
	addr("10.0.0.0/8", "10.9.8.7", 22, true)
	addr("10.0.0.0/8", "11.0.0.1", 22, false)
	addr("10.0.0.0/8:22", "10.9.8.7", 23, false)
	addr("10.1.2.3", "10.1.2.3", 80, true)
	addr("10.1.2.3", "10.1.2.4", 80, false)
	addr("fd00::/8", "fd12::1", 443, true)
	addr("[2001:db8::1]:22", "2001:db8::1", 22, true)
	addr("example.org", "10.0.0.1", 80, false)
}

// FuzzParseRule: no input makes the parser panic, take too long or
// accept something whose written form does not read back the same.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.org", "*.example.org:443", "10.0.0.0/8:22", "[2001:db8::1]:22",
		"bücher.de", "xn--bcher-kva.de", "a..b", "\x00", "[::1", "fe80::1%eth0", "1.2.3", "*.*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		text := r.String()
		if text == "" || len(text) > maxRuleText+64 {
			t.Fatalf("ParseRule(%q) = %q", s, text)
		}
		again, err := ParseRule(text)
		if err != nil || again.String() != text {
			t.Fatalf("ParseRule(%q) = %q, which reads back as %q, %v", s, text, again, err)
		}
		if !isASCII(text) {
			t.Fatalf("ParseRule(%q) = %q, not ASCII", s, text)
		}
	})
}
