package shell

import (
	"strings"
	"testing"
)

func TestCollectorStreamsWholeCharactersUpToItsCap(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int
		writes    []string
		emitted   []string
		kept      string
		truncated bool
	}{
		{"a character split over writes", 0, []string{"caf\xc3", "\xa9!"}, []string{"caf", "é!"}, "café!", false},
		{"a 4-byte character in three writes", 0, []string{"\xf0\x9f", "\x98", "\x80"}, []string{"😀"}, "😀", false},
		{"bytes that are not UTF-8", 0, []string{"a\xff", "b"}, []string{"a\uFFFD", "b"}, "a\xffb", false},
		{"an unfinished character at the end", 0, []string{"x\xe2\x82"}, []string{"x", "\uFFFD"}, "x\xe2\x82", false},
		{"the cap", 4, []string{"abc", "def", "g"}, []string{"abc", "d"}, "abcd", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			c := NewCollector(tc.max, func(s string) { got = append(got, s) })
			for _, w := range tc.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("write %q: %d, %v", w, n, err)
				}
			}
			c.Close()
			if strings.Join(got, "|") != strings.Join(tc.emitted, "|") || string(c.Bytes()) != tc.kept || c.Truncated() != tc.truncated {
				t.Errorf("emitted %q, kept %q, truncated %v; want %q, %q, %v", got, c.Bytes(), c.Truncated(), tc.emitted, tc.kept, tc.truncated)
			}
		})
	}
}
