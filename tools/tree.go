package tools

import (
	"cmp"
	"fmt"
	"image"
	"regexp"
	"strconv"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// The accessibility tree beside a screenshot (sandbox_screenshot with
// tree: true), as a model reads it: one line per element, indented under
// its parent,
//
//	[ref=e7] button "Save order" focused (231,167 81×21)
//
// with its ref, role, name, states, value and bounds (x,y of the top left
// corner, width×height) in pixels of the screenshot, then what was left
// out and why. The agent reads the tree (resources/agent/perception.py);
// this picks what to show of it.

// Bounds of sandbox_screenshot's tree options.
const (
	defaultMaxNodes = 300
	maxMaxNodes     = 3000
	maxQueryLength  = 200
	// maxShown bounds a name or value as shown, in characters: a label can
	// hold a whole paragraph.
	maxShown = 100
	// maxIndent bounds the indentation, in levels: pages nest deep.
	maxIndent = 20
)

// refPattern is what a ref looks like (perception.py makes them).
var refPattern = regexp.MustCompile(`^e[1-9][0-9]{0,8}$`)

func checkRef(field, ref string) error {
	if !refPattern.MatchString(ref) {
		return argError(field, fmt.Sprintf("must be a ref from the tree of sandbox_screenshot with tree: true, like e12; got %q", ref))
	}
	return nil
}

// treeView is what the model asked to see of the tree.
type treeView struct {
	query    string
	scope    string
	maxNodes int
}

// treeText is the tree as the model reads it; isError when there is no
// tree to show (nothing on the screen exposes one, or scope names nothing
// in it), the text then saying why.
func treeText(t desktop.Tree, s scale, v treeView) (string, bool) {
	if t.Content == 0 {
		return emptyTree(t, s), true
	}
	nodes := t.Nodes
	if v.scope != "" {
		var ok bool
		if nodes, ok = subtree(nodes, v.scope); !ok {
			return fmt.Sprintf("scope %s is not in the tree now (it is gone, or off the screen): take a screenshot with "+
				"tree: true without scope to see the refs there are.", v.scope), true
		}
	}
	unmatched := 0
	if v.query != "" {
		before := len(nodes)
		nodes = matching(nodes, v.query)
		unmatched = before - len(nodes)
	}
	budget := cmp.Or(v.maxNodes, defaultMaxNodes)
	shown := nodes[:min(budget, len(nodes))]
	var b strings.Builder
	fmt.Fprintf(&b, "Accessibility tree of the screen, %s (x,y w×h in pixels of this screenshot; sandbox_click and "+
		"sandbox_type take an element's ref instead of x and y):\n", plural(len(shown), "element"))
	for _, n := range shown {
		writeNode(&b, n, s)
	}
	if len(shown) == 0 {
		fmt.Fprintf(&b, "No element's role or name contains %q.\n", v.query)
	}
	b.WriteString(leftOut(t.Omitted, len(nodes)-len(shown), budget, unmatched))
	return strings.TrimSpace(b.String()), false
}

// writeNode writes one element's line.
func writeNode(b *strings.Builder, n desktop.Node, s scale) {
	b.WriteString(strings.Repeat("  ", min(n.Depth, maxIndent)))
	fmt.Fprintf(b, "[ref=%s] %s", n.Ref, n.Role)
	if n.Name != "" {
		fmt.Fprintf(b, " %s", quoted(n.Name))
	}
	for _, st := range n.States {
		b.WriteString(" " + st)
	}
	if n.Value != "" {
		fmt.Fprintf(b, " value=%s", quoted(n.Value))
	}
	if r := n.Rect(); !r.Empty() {
		b.WriteString(" " + boxText(s.rectToShot(r)))
	}
	if n.Note != "" {
		b.WriteString(": " + n.Note)
	}
	b.WriteByte('\n')
}

// quoted is a name as a Go string literal, cut to maxShown characters.
func quoted(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxShown {
		s = string(r[:maxShown]) + "…"
	}
	return strconv.Quote(s)
}

func boxText(r image.Rectangle) string {
	return fmt.Sprintf("(%d,%d %d×%d)", r.Min.X, r.Min.Y, r.Dx(), r.Dy())
}

// rectToShot maps a rectangle of display pixels to the screenshot pixels
// it covers.
func (s scale) rectToShot(r image.Rectangle) image.Rectangle {
	lo, hi := s.toShot(r.Min), s.toShot(r.Max.Sub(image.Pt(1, 1)))
	return image.Rectangle{Min: lo, Max: hi.Add(image.Pt(1, 1))}
}

// subtree is the element ref and what is under it, one level up for each
// level it had.
func subtree(nodes []desktop.Node, ref string) ([]desktop.Node, bool) {
	for i, n := range nodes {
		if n.Ref != ref {
			continue
		}
		end := i + 1
		for end < len(nodes) && nodes[end].Depth > n.Depth {
			end++
		}
		out := make([]desktop.Node, 0, end-i)
		for _, m := range nodes[i:end] {
			m.Depth -= n.Depth
			out = append(out, m)
		}
		return out, true
	}
	return nil, false
}

// matching keeps the elements whose role, name or value holds query (any
// case), and the elements they are in, for where they are.
func matching(nodes []desktop.Node, query string) []desktop.Node {
	q := strings.ToLower(query)
	keep := make([]bool, len(nodes))
	for i, n := range nodes {
		if keep[i] || !strings.Contains(strings.ToLower(n.Role+"\x00"+n.Name+"\x00"+n.Value), q) {
			continue
		}
		keep[i] = true
		depth := n.Depth
		for j := i - 1; j >= 0 && depth > 0; j-- {
			if nodes[j].Depth < depth {
				keep[j], depth = true, nodes[j].Depth
			}
		}
	}
	var out []desktop.Node
	for i, n := range nodes {
		if keep[i] {
			out = append(out, n)
		}
	}
	return out
}

// leftOut says what the tree does not list, and why.
func leftOut(o desktop.Omitted, overBudget, budget, unmatched int) string {
	var parts []string
	if o.Offscreen > 0 {
		parts = append(parts, fmt.Sprintf("%d outside the screen or a page's view, or not shown (scroll to reach them)", o.Offscreen))
	}
	if o.Covered > 0 {
		parts = append(parts, fmt.Sprintf("%d behind other windows", o.Covered))
	}
	if overBudget > 0 {
		parts = append(parts, fmt.Sprintf("%d past maxNodes, %d (raise it, or narrow the tree with scope or query)", overBudget, budget))
	}
	if unmatched > 0 {
		parts = append(parts, fmt.Sprintf("%d not matching the query", unmatched))
	}
	if o.Unread > 0 {
		parts = append(parts, fmt.Sprintf("%d not read (a program or page with more elements than are read of one)", o.Unread))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Not listed: " + strings.Join(parts, "; ") + ".\n"
}

// emptyTree says why nothing on the screen has a tree.
func emptyTree(t desktop.Tree, s scale) string {
	if len(t.Nodes) == 0 {
		msg := "There is no accessibility tree: no window is open on the screen"
		if t.Omitted.Offscreen+t.Omitted.Covered > 0 {
			msg = "There is no accessibility tree: no window on the screen is in view"
		}
		return msg + ". Use the screenshot."
	}
	var b strings.Builder
	b.WriteString("There is no accessibility tree: nothing on the screen exposes one.\n")
	for _, n := range t.Nodes {
		writeNode(&b, n, s)
	}
	return strings.TrimSpace(b.String())
}
