package desktop

import (
	"context"
	"image"
	"time"
)

// Perception: the accessibility tree of what is on the screen, the
// elements of it found and focused again by ref, and whether the screen
// changed (resources/agent/perception.py and xscreen.py do the work in
// the sandbox).

// Tree is the screen's accessibility tree: its nodes in order, each after
// its parent (Depth one more), the top-level windows at depth 0, topmost
// first.
type Tree struct {
	Nodes   []Node
	Omitted Omitted
	// Content counts the nodes a program exposed (not the windows that
	// stand for programs that expose none).
	Content int
}

// Node is one element of the tree, in display pixels.
type Node struct {
	// Ref names the element in Locate and Focus until it is gone.
	Ref    string   `json:"ref"`
	Depth  int      `json:"depth"`
	Role   string   `json:"role"`
	Name   string   `json:"name"`
	States []string `json:"states"`
	Value  string   `json:"value"`
	// Box is where it is on the screen, [x, y, width, height], cut to the
	// screen.
	Box []int `json:"box"`
	// Note says something of it a model should know: a window whose
	// program exposes no tree says so, and why.
	Note string `json:"note"`
}

// Rect is the node's box as a rectangle; empty when it has none.
func (n Node) Rect() image.Rectangle { return rect(n.Box) }

func rect(b []int) image.Rectangle {
	if len(b) != 4 {
		return image.Rectangle{}
	}
	return image.Rect(b[0], b[1], b[0]+b[2], b[1]+b[3])
}

// Omitted counts what the tree leaves out, by why.
type Omitted struct {
	// Offscreen: outside the screen or a page's view (scrolled away), or
	// not shown.
	Offscreen int `json:"offscreen"`
	// Covered: behind another window.
	Covered int `json:"covered"`
	// Unread: past the bounds of what is read of one program or page.
	Unread int `json:"unread"`
}

// treeTimeout bounds a tree's reading: perception.py gives itself 5 s,
// then answers with what it has.
const treeTimeout = 15 * time.Second

// Tree reads the screen's accessibility tree. Its refs replace those of
// the tree before (an element seen in both keeps its ref).
func (d *Desktop) Tree(ctx context.Context) (Tree, error) {
	resp, err := d.call(ctx, request{Op: "tree", maxAnswer: maxTreeAnswer}, treeTimeout)
	return Tree{Nodes: resp.Nodes, Omitted: resp.Omitted, Content: resp.Content}, err
}

// Element is where an element of the tree is now, and what it is.
type Element struct {
	Box  image.Rectangle // in display pixels, cut to the screen
	Role string
	Name string
}

// Locate finds a ref's element on the screen now. An element that is
// gone, hidden, scrolled away or behind another window is an ErrAgent
// error saying so.
func (d *Desktop) Locate(ctx context.Context, ref string) (Element, error) {
	resp, err := d.call(ctx, request{Op: "locate", Ref: ref}, requestTimeout)
	box := image.Rect(resp.X, resp.Y, resp.X+resp.Width, resp.Y+resp.Height)
	return Element{Box: box, Role: resp.Role, Name: resp.Name}, err
}

// Focus brings a ref's element's window to the front and gives the element
// the keyboard focus.
func (d *Desktop) Focus(ctx context.Context, ref string) (Element, error) {
	resp, err := d.call(ctx, request{Op: "focus", Ref: ref}, requestTimeout)
	return Element{Role: resp.Role, Name: resp.Name}, err
}

// Mark starts watching the screen: Settle reports what changes after it.
func (d *Desktop) Mark(ctx context.Context) error {
	_, err := d.call(ctx, request{Op: "mark"}, requestTimeout)
	return err
}

// Change is what happened on the screen after an action.
type Change struct {
	// Changed: something was drawn that differs from the screen before,
	// a caret's blink aside.
	Changed bool
	// Box bounds what changed, in display pixels.
	Box image.Rectangle
	// Settled is when the last change came, from the call to Settle.
	Settled time.Duration
	// Still: the screen was still for the quiet period after it (false:
	// still changing when the longest wait ran out).
	Still bool
}

// Settle waits, after an action and a Mark before it, up to wait for the
// screen to change; once it has, until it has been still for quiet, at
// most longest in all.
func (d *Desktop) Settle(ctx context.Context, wait, quiet, longest time.Duration) (Change, error) {
	req := request{Op: "settle", WaitMs: wait.Milliseconds(), QuietMs: quiet.Milliseconds(), LongestMs: longest.Milliseconds()}
	resp, err := d.call(ctx, req, requestTimeout+longest)
	return Change{Changed: resp.Changed, Box: rect(resp.Box), Settled: time.Duration(resp.Ms) * time.Millisecond, Still: resp.Still}, err
}

// Stillness is how a wait for a still screen ended.
type Stillness struct {
	Still   bool          // the screen was still for the quiet period (false: the timeout came first)
	Took    time.Duration // from the call until it was still, or until the timeout
	Changed bool          // something changed meanwhile
}

// Still waits until the screen has been still for quiet, at most timeout.
func (d *Desktop) Still(ctx context.Context, quiet, timeout time.Duration) (Stillness, error) {
	req := request{Op: "still", QuietMs: quiet.Milliseconds(), TimeoutMs: timeout.Milliseconds()}
	resp, err := d.call(ctx, req, requestTimeout+timeout)
	return Stillness{Still: resp.Still, Took: time.Duration(resp.Ms) * time.Millisecond, Changed: resp.Changed}, err
}
