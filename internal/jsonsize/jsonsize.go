// Package jsonsize measures strings as encoding/json writes them, so that a
// cap on what a reply carries holds however the text encodes: a NUL byte
// takes 6 bytes (\u0000), a quote 2, '<' 6 (Marshal escapes HTML).
package jsonsize

import "unicode/utf8"

// Cut returns the longest prefix of s, ending at a whole character, whose
// encoding as a JSON string by encoding/json.Marshal takes at most max
// bytes (quotes aside), and whether it left anything out.
func Cut(s string, max int) (string, bool) {
	size := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		size += runeLen(r, n)
		if size > max {
			return s[:i], true
		}
		i += n
	}
	return s, false
}

// runeLen is what encoding/json writes for the n bytes holding r.
func runeLen(r rune, n int) int {
	switch {
	case r == '"', r == '\\', r == '\b', r == '\f', r == '\n', r == '\r', r == '\t':
		return 2
	case r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return 6 // \u00XX
	case r == utf8.RuneError && n == 1:
		return 6 // a byte that is not UTF-8 becomes \ufffd
	}
	return n
}
