// Package textdiff writes the difference between two texts as a unified
// diff (diff -u's format, three lines of context), for a person to read:
// what changed in repository content since the user approved it
// (docs/protocol.md, "Approvals show what they approve").
//
// The texts may come from a stranger's repository, so the work is bounded:
// lines common to both ends are set aside first, and what is left is
// compared line by line only while it fits in maxCells; past that, the
// middle is shown as removed and added whole, which is still a true diff.
package textdiff

import (
	"fmt"
	"strings"
)

// maxCells bounds the comparison table of the lines left between the
// common ends (4 million cells, 4 MB: 2,000 lines against 2,000).
const maxCells = 4 << 20

// context is how many unchanged lines surround a change.
const context = 3

// op is one line of the diff: ' ' kept, '-' removed, '+' added.
type op struct {
	kind byte
	text string
}

// Unified is the diff from old to new, with the file names oldName and
// newName in its header; "" when they are equal.
func Unified(old, new, oldName, newName string) string {
	if old == new {
		return ""
	}
	a, b := lines(old), lines(new)
	ops := diff(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	for _, h := range hunks(ops) {
		writeHunk(&out, ops, h)
	}
	return out.String()
}

// lines splits text into lines without their newlines; a last line
// without one is a line too.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// diff is the edit script from a to b: the common prefix and suffix kept,
// the middle by longest common subsequence when small enough.
func diff(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for _, l := range a[:pre] {
		ops = append(ops, op{' ', l})
	}
	ops = append(ops, middle(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

// middle compares a and b by longest common subsequence, or, past
// maxCells, shows a removed and b added.
func middle(a, b []string) []op {
	if (len(a)+1)*(len(b)+1) > maxCells {
		return replaced(a, b)
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			switch {
			case a[i] == b[j]:
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
				lcs[i*w+j] = lcs[(i+1)*w+j]
			default:
				lcs[i*w+j] = lcs[i*w+j+1]
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i, j = i+1, j+1
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	return append(ops, replaced(a[i:], b[j:])...)
}

func replaced(a, b []string) []op {
	ops := make([]op, 0, len(a)+len(b))
	for _, l := range a {
		ops = append(ops, op{'-', l})
	}
	for _, l := range b {
		ops = append(ops, op{'+', l})
	}
	return ops
}

// hunk is a range of ops shown together.
type hunk struct{ from, to int }

// hunks groups the changes with their context; changes closer than twice
// the context share a hunk.
func hunks(ops []op) []hunk {
	var out []hunk
	for i := 0; i < len(ops); i++ {
		if ops[i].kind == ' ' {
			continue
		}
		from, to := max(i-context, 0), min(i+context+1, len(ops))
		if n := len(out); n > 0 && from <= out[n-1].to {
			out[n-1].to = to
		} else {
			out = append(out, hunk{from, to})
		}
	}
	return out
}

// writeHunk writes one hunk with its header, whose line numbers count
// from 1 (0 for an empty side).
func writeHunk(out *strings.Builder, ops []op, h hunk) {
	oldLine, newLine := 1, 1
	for _, o := range ops[:h.from] {
		if o.kind != '+' {
			oldLine++
		}
		if o.kind != '-' {
			newLine++
		}
	}
	oldLen, newLen := 0, 0
	for _, o := range ops[h.from:h.to] {
		if o.kind != '+' {
			oldLen++
		}
		if o.kind != '-' {
			newLen++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", span(oldLine, oldLen), span(newLine, newLen))
	for _, o := range ops[h.from:h.to] {
		out.WriteByte(o.kind)
		out.WriteString(o.text)
		out.WriteByte('\n')
	}
}

// span is a side's range in a hunk header: start,length, where an empty
// side starts one line earlier (diff -u's convention).
func span(start, length int) string {
	if length == 0 {
		start--
	}
	if length == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, length)
}
