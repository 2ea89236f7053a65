package netpolicy

import (
	"net/netip"
)

// The fixed denials: destinations no rule, preset or answer lifts
// (docs/protocol.md, "Network policy"). The host's own addresses (the
// sandbox network's gateway, the host's interfaces) join them per sandbox
// through the Host interface; the user's servers are reached only through
// sandbox/ports/forward.

// smtpPort is SMTP's: a sandbox that can send mail can send spam in the
// user's name.
const smtpPort = 25

// Span is a range of addresses and why it is where it is.
type Span struct {
	Prefix netip.Prefix `json:"cidr"`
	Why    string       `json:"why"`
}

var fixedSpans = []Span{
	span("169.254.0.0/16", "link-local, with the cloud metadata service 169.254.169.254"),
	span("fe80::/10", "IPv6 link-local"),
	span("fd00:ec2::254/128", "the cloud metadata service over IPv6 (AWS)"),
	span("100.100.100.200/32", "the cloud metadata service (Alibaba Cloud)"),
	span("0.0.0.0/8", "\"this network\": 0.0.0.0 reaches the local machine"),
	span("::/128", "the unspecified IPv6 address"),
	span("224.0.0.0/4", "multicast"),
	span("ff00::/8", "IPv6 multicast"),
	span("240.0.0.0/4", "reserved, and the broadcast address"),
}

// privateSpans are denied by every preset; an allow or ask rule of an IP
// or CIDR that covers an address lifts that for it.
var privateSpans = []Span{
	span("10.0.0.0/8", "private (RFC 1918)"),
	span("172.16.0.0/12", "private (RFC 1918)"),
	span("192.168.0.0/16", "private (RFC 1918)"),
	span("100.64.0.0/10", "shared address space (carrier-grade NAT, Tailscale)"),
	span("127.0.0.0/8", "loopback"),
	span("::1/128", "IPv6 loopback"),
	span("fc00::/7", "IPv6 unique local"),
}

func span(cidr, why string) Span {
	return Span{Prefix: netip.MustParsePrefix(cidr), Why: why}
}

// nat64 is the well-known NAT64 prefix (RFC 6052): on a network that has
// one, 64:ff9b::a9fe:a9fe reaches 169.254.169.254, so the IPv4 address
// inside is judged too.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// plain is the address a connection really reaches: IPv4-mapped IPv6
// (::ffff:10.0.0.1) and NAT64 addresses as their IPv4, without a zone.
func plain(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if nat64.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return a
}

// fixedDenial says why a is a fixed denial, or "". host are the host's own
// addresses for this sandbox.
func fixedDenial(a netip.Addr, host []netip.Addr) string {
	for _, s := range fixedSpans {
		if s.Prefix.Contains(a) {
			return s.Why
		}
	}
	for _, h := range host {
		if plain(h) == a {
			return "an address of the host itself (the host's servers are reached through a forward, sandbox/ports/forward)"
		}
	}
	return ""
}

// privateRange says which private range holds a, or "".
func privateRange(a netip.Addr) string {
	for _, s := range privateSpans {
		if s.Prefix.Contains(a) {
			return s.Why + " " + s.Prefix.String()
		}
	}
	return ""
}
