package textdiff

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one line changed", "FROM x\nRUN a\nRUN b\n", "FROM x\nRUN c\nRUN b\n",
			"--- old\n+++ new\n@@ -1,3 +1,3 @@\n FROM x\n-RUN a\n+RUN c\n RUN b\n"},
		{"added at the end", "a\n", "a\nb\n", "--- old\n+++ new\n@@ -1 +1,2 @@\n a\n+b\n"},
		{"from nothing", "", "a\nb\n", "--- old\n+++ new\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"to nothing", "a\n", "", "--- old\n+++ new\n@@ -1 +0,0 @@\n-a\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- old\n+++ new\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unified(tc.old, tc.new, "old", "new"); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestUnifiedApplies: for random edits of random texts, including ones
// past the comparison's bound, the diff applied to the old text gives the
// new one.
func TestUnifiedApplies(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		n := rng.IntN(40)
		if i%50 == 0 {
			n = 2500 // past maxCells once edited
		}
		old := randomLines(rng, n)
		new := edit(rng, old)
		d := Unified(join(old), join(new), "a", "b")
		got, err := apply(old, d)
		if err != nil || join(got) != join(new) {
			t.Fatalf("case %d: %v\nold %q\nnew %q\ndiff\n%s", i, err, old, new, d)
		}
	}
}

func randomLines(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(rng.IntN(8))
	}
	return out
}

func edit(rng *rand.Rand, in []string) []string {
	out := append([]string(nil), in...)
	for range rng.IntN(6) + 1 {
		switch at := rng.IntN(len(out) + 1); rng.IntN(3) {
		case 0:
			out = append(out[:at], append([]string{"new" + strconv.Itoa(rng.IntN(5))}, out[at:]...)...)
		case 1:
			if at < len(out) {
				out = append(out[:at], out[at+1:]...)
			}
		default:
			if at < len(out) {
				out[at] = "changed"
			}
		}
	}
	return out
}

func join(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return strings.Join(l, "\n") + "\n"
}

// apply applies a unified diff to old, checking each hunk's header and
// context.
func apply(old []string, d string) ([]string, error) {
	if d == "" {
		return old, nil
	}
	rows := strings.Split(strings.TrimSuffix(d, "\n"), "\n")[2:]
	var out []string
	at := 0 // next line of old, from 0
	for len(rows) > 0 {
		var os, ol, ns, nl int
		if _, err := fmt.Sscanf(normalize(rows[0]), "@@ -%d,%d +%d,%d @@", &os, &ol, &ns, &nl); err != nil {
			return nil, fmt.Errorf("hunk header %q: %w", rows[0], err)
		}
		start := os - 1
		if ol == 0 {
			start = os
		}
		out = append(out, old[at:start]...)
		at = start
		rows = rows[1:]
		for len(rows) > 0 && !strings.HasPrefix(rows[0], "@@") {
			kind, text := rows[0][0], rows[0][1:]
			switch kind {
			case ' ', '-':
				if at >= len(old) || old[at] != text {
					return nil, fmt.Errorf("line %d is %q, the diff says %q", at+1, old[at], text)
				}
				if kind == ' ' {
					out = append(out, text)
				}
				at++
			case '+':
				out = append(out, text)
			}
			rows = rows[1:]
		}
	}
	return append(out, old[at:]...), nil
}

// normalize writes a header's one-line ranges ("-3") as "-3,1".
func normalize(header string) string {
	f := strings.Fields(header)
	for i := 1; i <= 2; i++ {
		if !strings.Contains(f[i], ",") {
			f[i] += ",1"
		}
	}
	return strings.Join(f, " ")
}
