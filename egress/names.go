package egress

import (
	"net/netip"
	"strings"
)

// maxName is the longest DNS name (RFC 1035 2.3.4, without the final dot).
const maxName = 253

// hostName normalizes a name the sandbox gave (a DNS question, an SNI, a
// Host): lower case, no trailing dot. It refuses anything that is not a DNS
// host name: letters, digits and hyphens in labels of 1 to 63 characters,
// at most 253 in all, with underscores allowed for service labels
// (_git._tcp). An internationalized name must arrive as its punycode
// (xn--...): a name with any other byte (a NUL, a Cyrillic look-alike of a
// Latin letter) is refused, so a homograph cannot pass for the name it
// imitates.
func hostName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > maxName {
		return "", false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !validLabel(label) {
			return "", false
		}
	}
	return s, true
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// hostNames normalizes the names a proxy reported, dropping duplicates and
// any that are literal addresses (those are judged as the address). ok is
// false when one is not a host name at all.
func hostNames(raw []string) (names []string, ok bool) {
	for _, r := range raw {
		if _, err := netip.ParseAddr(r); err == nil {
			continue
		}
		n, valid := hostName(r)
		if !valid {
			return nil, false
		}
		names = appendNew(names, n)
	}
	return names, true
}

func appendNew(list []string, s string) []string {
	for _, have := range list {
		if have == s {
			return list
		}
	}
	return append(list, s)
}

// dialable says whether the proxy may ever be told to dial a: whatever a
// Judge answers, never the sandbox's own loopback or unspecified address,
// link-local addresses (cloud metadata services among them), multicast,
// broadcast, or the synthetic range this package answers DNS from.
func dialable(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() &&
		!a.IsLinkLocalMulticast() && !a.IsInterfaceLocalMulticast() && !a.IsMulticast() &&
		a != netip.AddrFrom4([4]byte{255, 255, 255, 255}) && !synthetic.Contains(a)
}
