package netpolicy

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/idna"
)

// Host names are matched in one form: lower-case ASCII, internationalised
// labels as their A-labels ("xn--..."), no trailing dot. A name a user
// writes in Unicode (a U-label, "bücher.de") is converted to that form by
// UTS #46, as browsers do, and shown as the A-label from then on, so that
// a look-alike (an IDN homograph such as a Cyrillic "а" in "exаmple.org")
// is never displayed as the name it imitates. A name that comes from the
// sandbox (DNS, SNI, Host) must already be ASCII: anything else is refused.

// Bounds of a host name (RFC 1035: 253 characters as text, 63 per label).
const (
	maxName  = 253
	maxLabel = 63
)

var (
	errNameEmpty  = errors.New("is empty")
	errNameLong   = fmt.Errorf("is longer than %d characters", maxName)
	errNameASCII  = errors.New("is not ASCII (a name from the network must use A-labels, xn--...)")
	errNameDigits = errors.New("ends in a numeric label but is not an IP address")
)

// normalName returns name in the form rules are matched in. With unicode
// set (a name the user or a repository wrote) U-labels are converted;
// converted then says so. Without it (a name from the sandbox) a name
// that is not ASCII is refused.
func normalName(name string, unicode bool) (norm string, converted bool, err error) {
	if len(name) > 4*maxName { // before any work on it: a hostile name may be huge
		return "", false, errNameLong
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", false, errNameEmpty
	}
	if !isASCII(name) {
		if !unicode {
			return "", false, errNameASCII
		}
		if reason := badRune(name); reason != "" {
			return "", false, errors.New(reason)
		}
		a, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return "", false, fmt.Errorf("is not a valid internationalised name (%v)", stripIDNA(err))
		}
		name, converted = a, true
	}
	name = strings.ToLower(name)
	if len(name) > maxName {
		return "", false, errNameLong
	}
	labels := strings.Split(name, ".")
	for _, label := range labels {
		if label == "" {
			return "", false, errors.New("has an empty label (two dots in a row, or a leading dot)")
		}
		if reason := badLabel(label); reason != "" {
			return "", false, fmt.Errorf("has the label %q, which %s", clip(label), reason)
		}
	}
	if allDigits(labels[len(labels)-1]) {
		return "", false, errNameDigits
	}
	return name, converted, nil
}

// badLabel says what is wrong with one lower-case ASCII label, or "".
// Underscores are allowed: service names (_sip._tcp) and some real hosts
// carry them, and they change nothing about matching.
func badLabel(label string) string {
	switch {
	case len(label) > maxLabel:
		return fmt.Sprintf("is longer than %d characters", maxLabel)
	case label[0] == '-' || label[len(label)-1] == '-':
		return "starts or ends with a hyphen"
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Sprintf("has %q, which is not a letter, digit, hyphen or underscore", rune(c))
		}
	}
	if strings.HasPrefix(label, "xn--") {
		// An A-label must decode to a valid U-label and back to itself;
		// otherwise it is not the name it claims to be.
		u, err := idna.Lookup.ToUnicode(label)
		if err != nil {
			return "is not a valid A-label (" + stripIDNA(err) + ")"
		}
		if back, err := idna.Lookup.ToASCII(u); err != nil || back != label {
			return "is not a valid A-label (not in its canonical form)"
		}
	}
	return ""
}

// badRune says why a Unicode name cannot be converted, for the characters
// UTS #46 would silently map or drop but which have no place in a rule.
func badRune(name string) string {
	for _, r := range name {
		switch {
		case r == 0:
			return "has a NUL character"
		case r < 0x20 || r == 0x7f:
			return "has a control character"
		case r == ' ' || r == '\u00a0' || r == '\u3000':
			return "has a space"
		case r == '\ufffd':
			return "is not valid UTF-8"
		}
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// stripIDNA drops the library's "idna: " prefix.
func stripIDNA(err error) string {
	return strings.TrimPrefix(err.Error(), "idna: ")
}

// CheckName returns the name the sandbox asked for (a DNS question, a TLS
// SNI, an HTTP Host) in the form rules match, or an error saying why it is
// not a host name. Such names come from code the sandbox runs, so nothing
// but ASCII is taken.
func CheckName(name string) (string, error) {
	n, _, err := normalName(name, false)
	if err != nil {
		return "", fmt.Errorf("%q %w", clip(name), err)
	}
	return n, nil
}

// clip shortens what a hostile input put into a message.
func clip(s string) string {
	const most = 80
	if len(s) <= most {
		return s
	}
	return s[:most] + "..."
}
