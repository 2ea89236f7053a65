package jsonsize

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// marshalLen is what encoding/json writes for s, quotes aside.
func marshalLen(t *testing.T, s string) int {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return len(b) - 2
}

// checkExact checks that Cut counts s's encoding exactly: it keeps s whole
// within what Marshal writes, and cuts it one byte short of that.
func checkExact(t *testing.T, s string) {
	t.Helper()
	n := marshalLen(t, s)
	if got, cut := Cut(s, n); got != s || cut {
		t.Errorf("Cut(%q, %d) = %q, %v: Marshal writes it in %d bytes", s, n, got, cut, n)
	}
	if _, cut := Cut(s, n-1); s != "" && !cut {
		t.Errorf("Cut(%q, %d) kept it whole: Marshal writes %d bytes", s, n-1, n)
	}
}

// TestCutCountsAsMarshalWrites checks every byte alone, and characters of
// each UTF-8 length and every kind of escape, against encoding/json itself.
func TestCutCountsAsMarshalWrites(t *testing.T) {
	var cases []string
	for b := range 256 {
		cases = append(cases, string([]byte{byte(b)}))
	}
	cases = append(cases, "é", "€", "👋", "\u2028", "\u2029", "\uFFFD", "\x7f", "a\xffb", "\xe2\x82", "<a href=\"x\">&amp;</a>\\")
	for _, s := range cases {
		checkExact(t, s)
	}
}

func FuzzCut(f *testing.F) {
	f.Add("plain text")
	f.Add("\x00\x01\"\\<>&\u2028\xff")
	f.Fuzz(checkExact)
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
		cut  bool
	}{
		{"abc", 3, "abc", false},
		{"abc", 2, "ab", true},
		{"", 0, "", false},
		{"\x00\x00", 11, "\x00", true}, // 6 bytes each
		{"\x00\x00", 12, "\x00\x00", false},
		{"a👋", 4, "a", true}, // never half a character
		{"a👋", 5, "a👋", false},
		{"\"\"", 3, "\"", true},
	} {
		got, cut := Cut(tc.s, tc.max)
		if got != tc.want || cut != tc.cut {
			t.Errorf("Cut(%q, %d) = %q, %v; want %q, %v", tc.s, tc.max, got, cut, tc.want, tc.cut)
		}
	}
}

// TestCutBoundsTheEncoding: 10 MiB of NUL bytes, which Marshal made 60 MiB,
// is cut to what encodes in 10 MiB.
func TestCutBoundsTheEncoding(t *testing.T) {
	const max = 10 << 20
	for _, s := range []string{strings.Repeat("\x00", max), strings.Repeat("<\"é\xff", max/4), strings.Repeat("a", max+1)} {
		got, cut := Cut(s, max)
		if n := marshalLen(t, got); n > max || n <= max-6 || !cut || !utf8.ValidString(got) && utf8.ValidString(s) {
			t.Errorf("Cut of %d bytes starting %q encodes in %d bytes (cut %v), want at most %d", len(s), s[:8], n, cut, max)
		}
	}
}
