package tools

import (
	"image"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// pageTree is a tree as the agent reads a browser window, in display
// pixels.
var pageTree = desktop.Tree{
	Content: 5,
	Nodes: []desktop.Node{
		{Ref: "e1", Depth: 0, Role: "window", Name: "Orders - Chromium", Box: []int{0, 0, 1280, 780}},
		{Ref: "e2", Depth: 1, Role: "document", Name: "Orders", Box: []int{0, 87, 1280, 693}},
		{Ref: "e3", Depth: 2, Role: "heading", Name: "Orders", Box: []int{8, 108, 1264, 37}},
		{Ref: "e4", Depth: 2, Role: "textbox", Name: "Name", States: []string{"focused"}, Value: "Bob", Box: []int{50, 167, 177, 21}},
		{Ref: "e5", Depth: 2, Role: "button", Name: "Save \"order\"", Box: []int{231, 167, 81, 21}},
		{Ref: "e6", Depth: 2, Role: "list", Box: []int{8, 300, 400, 60}},
		{Ref: "e7", Depth: 3, Role: "listitem", Name: "Save the file first", Box: []int{8, 300, 400, 20}},
	},
	Omitted: desktop.Omitted{Offscreen: 12, Covered: 1},
}

func TestTreeText(t *testing.T) {
	s := scaleFor(desktop.DefaultDisplay)
	for _, tc := range []struct {
		name string
		tree desktop.Tree
		view treeView
		want string
		err  bool
	}{
		{"every element, indented under its parent", pageTree, treeView{}, `Accessibility tree of the screen, 7 elements (x,y w×h in pixels of this screenshot; sandbox_click and sandbox_type take an element's ref instead of x and y):
[ref=e1] window "Orders - Chromium" (0,0 1280×780)
  [ref=e2] document "Orders" (0,87 1280×693)
    [ref=e3] heading "Orders" (8,108 1264×37)
    [ref=e4] textbox "Name" focused value="Bob" (50,167 177×21)
    [ref=e5] button "Save \"order\"" (231,167 81×21)
    [ref=e6] list (8,300 400×60)
      [ref=e7] listitem "Save the file first" (8,300 400×20)
Not listed: 12 outside the screen or a page's view, or not shown (scroll to reach them); 1 behind other windows.`, false},
		{"scope: one element and what is in it, from depth 0", pageTree, treeView{scope: "e6"}, `Accessibility tree of the screen, 2 elements (x,y w×h in pixels of this screenshot; sandbox_click and sandbox_type take an element's ref instead of x and y):
[ref=e6] list (8,300 400×60)
  [ref=e7] listitem "Save the file first" (8,300 400×20)
Not listed: 12 outside the screen or a page's view, or not shown (scroll to reach them); 1 behind other windows.`, false},
		{"query: the matches and what they are in", pageTree, treeView{query: "SAVE"}, `Accessibility tree of the screen, 5 elements (x,y w×h in pixels of this screenshot; sandbox_click and sandbox_type take an element's ref instead of x and y):
[ref=e1] window "Orders - Chromium" (0,0 1280×780)
  [ref=e2] document "Orders" (0,87 1280×693)
    [ref=e5] button "Save \"order\"" (231,167 81×21)
    [ref=e6] list (8,300 400×60)
      [ref=e7] listitem "Save the file first" (8,300 400×20)
Not listed: 12 outside the screen or a page's view, or not shown (scroll to reach them); 1 behind other windows; 2 not matching the query.`, false},
		{"query matching nothing", pageTree, treeView{query: "cancel"}, `Accessibility tree of the screen, 0 elements (x,y w×h in pixels of this screenshot; sandbox_click and sandbox_type take an element's ref instead of x and y):
No element's role or name contains "cancel".
Not listed: 12 outside the screen or a page's view, or not shown (scroll to reach them); 1 behind other windows; 7 not matching the query.`, false},
		{"maxNodes: the first ones, in order", desktop.Tree{Content: 7, Nodes: pageTree.Nodes}, treeView{maxNodes: 3}, `Accessibility tree of the screen, 3 elements (x,y w×h in pixels of this screenshot; sandbox_click and sandbox_type take an element's ref instead of x and y):
[ref=e1] window "Orders - Chromium" (0,0 1280×780)
  [ref=e2] document "Orders" (0,87 1280×693)
    [ref=e3] heading "Orders" (8,108 1264×37)
Not listed: 4 past maxNodes, 3 (raise it, or narrow the tree with scope or query).`, false},
		{"a scope that is not there", pageTree, treeView{scope: "e99"}, `scope e99 is not in the tree now (it is gone, or off the screen): take a screenshot with tree: true without scope to see the refs there are.`, true},
		{"nothing on the screen", desktop.Tree{}, treeView{}, `There is no accessibility tree: no window is open on the screen. Use the screenshot.`, true},
		{"windows that expose none", desktop.Tree{Nodes: []desktop.Node{
			{Ref: "e1", Role: "window", Name: "sandbox@box: ~", Box: []int{0, 0, 484, 316}, Note: "exposes no accessibility tree (only GTK and Qt programs and Chromium's pages do); use the screenshot"},
		}}, treeView{}, `There is no accessibility tree: nothing on the screen exposes one.
[ref=e1] window "sandbox@box: ~" (0,0 484×316): exposes no accessibility tree (only GTK and Qt programs and Chromium's pages do); use the screenshot`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isErr := treeText(tc.tree, s, tc.view)
			if got != tc.want || isErr != tc.err {
				t.Errorf("got (error %v):\n%s\nwant (error %v):\n%s", isErr, got, tc.err, tc.want)
			}
		})
	}
}

// TestTreeIsInScreenshotPixels: on a display larger than a screenshot, a
// box is the screenshot pixels it covers, as x and y of the other tools.
func TestTreeIsInScreenshotPixels(t *testing.T) {
	s := scaleFor(desktop.Display{Width: 2560, Height: 1600}) // sent as 1388x867
	tree := desktop.Tree{Content: 1, Nodes: []desktop.Node{{Ref: "e1", Role: "button", Name: "OK", Box: []int{1000, 500, 200, 100}}}}
	got, _ := treeText(tree, s, treeView{})
	if !strings.Contains(got, `[ref=e1] button "OK" (542,271 109×55)`) {
		t.Errorf("got %s", got)
	}
	// The middle of the box is where a click at that point lands.
	at, err := s.point("x", 542+54, "y", 271+27)
	if err != nil || !at.In(image.Rect(1000, 500, 1200, 600)) {
		t.Errorf("the box's middle maps to %v, outside the element (%v)", at, err)
	}
}

func TestLongNamesAreCut(t *testing.T) {
	long := strings.Repeat("word ", 50)
	tree := desktop.Tree{Content: 1, Nodes: []desktop.Node{{Ref: "e1", Role: "paragraph", Name: long + "\n\tend"}}}
	got, _ := treeText(tree, scaleFor(desktop.DefaultDisplay), treeView{})
	line := strings.Split(got, "\n")[1]
	if want := `[ref=e1] paragraph "` + strings.TrimSpace(long)[:maxShown] + `…"`; line != want {
		t.Errorf("got  %s\nwant %s", line, want)
	}
}

func TestActingByRef(t *testing.T) {
	elements := map[string]desktop.Element{
		"e5": {Box: image.Rect(231, 167, 312, 188), Role: "button", Name: "Save order"},
		"e4": {Box: image.Rect(50, 167, 227, 188), Role: "textbox", Name: "Name"},
	}
	for _, tc := range []struct {
		tool, args, calls, text string
	}{
		{"sandbox_click", `{"ref": "e5"}`, `click [271,177,1,1]`, `Left-clicked e5 (button "Save order") at (271, 177). The pointer is at (271, 177).`},
		{"sandbox_double_click", `{"ref": "e5", "modifiers": ["ctrl"]}`, `click [271,177,1,2] +ctrl`, `Double-clicked e5 (button "Save order") at (271, 177) holding ctrl.`},
		{"sandbox_right_click", `{"ref": "e4"}`, `click [138,177,3,1]`, `Right-clicked e4 (textbox "Name") at (138, 177).`},
		{"sandbox_middle_click", `{"ref": "e4"}`, `click [138,177,2,1]`, `Middle-clicked e4 (textbox "Name") at (138, 177).`},
		{"sandbox_type", `{"ref": "e4", "text": "Bob"}`, `focus e4|type into e4 Bob`, `Typed 3 characters into e4 (textbox "Name").`},
	} {
		sb := &fakeSandbox{display: desktop.DefaultDisplay, elements: elements}
		res := call(t, sb, tc.tool, tc.args)
		if res.IsError || !strings.HasPrefix(textOf(res), tc.text) {
			t.Errorf("%s %s: %q (isError %v), want it to start %q", tc.tool, tc.args, textOf(res), res.IsError, tc.text)
		}
		if got := strings.Join(sb.calls, "|"); got != tc.calls {
			t.Errorf("%s %s: calls %q, want %q", tc.tool, tc.args, got, tc.calls)
		}
	}
}

func TestActionsSayWhetherTheScreenChanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change desktop.Change
		want   string
	}{
		{"nothing drawn", desktop.Change{}, "The screen did not change within 0.5 s."},
		{"drawn, then still", desktop.Change{Changed: true, Box: image.Rect(0, 200, 1280, 220), Settled: 187 * time.Millisecond, Still: true},
			"The screen changed (0,200 1280×20) and settled 187 ms after the action."},
		{"still moving", desktop.Change{Changed: true, Box: image.Rect(10, 10, 20, 20), Settled: 2 * time.Second},
			`The screen changed (10,10 10×10) and was still changing 2 s after the action (an animation, or a page still loading: sandbox_wait with until "stable" waits for it).`},
	} {
		for _, tool := range []struct{ name, args string }{
			{"sandbox_click", `{"x": 1, "y": 1}`}, {"sandbox_hover", `{"x": 1, "y": 1}`}, {"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 2, "endY": 2}`},
			{"sandbox_scroll", `{"x": 1, "y": 1, "direction": "up"}`}, {"sandbox_type", `{"text": "a"}`}, {"sandbox_key", `{"keys": "a"}`},
		} {
			sb := &fakeSandbox{display: desktop.DefaultDisplay, change: tc.change}
			if got := textOf(call(t, sb, tool.name, tool.args)); !strings.HasSuffix(got, tc.want) {
				t.Errorf("%s, %s: %q, want it to end %q", tc.name, tool.name, got, tc.want)
			}
		}
	}
	// Asking where the pointer is does nothing, and waits for nothing.
	sb := &fakeSandbox{display: desktop.DefaultDisplay, change: desktop.Change{Changed: true}}
	if got := textOf(call(t, sb, "sandbox_hover", `{}`)); got != "The pointer is at (0, 0)." {
		t.Errorf("hover without a point: %q", got)
	}
}

func TestWaitUntilStable(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		still      desktop.Stillness
		call, want string
	}{
		{"settles", `{"until": "stable"}`, desktop.Stillness{Still: true, Took: 1240 * time.Millisecond, Changed: true},
			"still 300ms 10s", "The screen was still (0.3 s without a change) 1240 ms after the call."},
		{"already still", `{"until": "stable", "timeoutMs": 2000}`, desktop.Stillness{Still: true, Took: 300 * time.Millisecond},
			"still 300ms 2s", "The screen was already still: nothing changed for 0.3 s."},
		{"never still", `{"until": "stable", "timeoutMs": 1500}`, desktop.Stillness{Took: 1500 * time.Millisecond, Changed: true},
			"still 300ms 1.5s", "The screen was still changing after 1.5 s: something keeps moving (an animation, a video, a progress bar). Take a screenshot to see it."},
	} {
		sb := &fakeSandbox{display: desktop.DefaultDisplay, still: tc.still}
		res := call(t, sb, "sandbox_wait", tc.args)
		if res.IsError || textOf(res) != tc.want {
			t.Errorf("%s: %q (isError %v), want %q", tc.name, textOf(res), res.IsError, tc.want)
		}
		if got := strings.Join(sb.calls, "|"); got != tc.call {
			t.Errorf("%s: calls %q, want %q", tc.name, got, tc.call)
		}
	}
}

func TestScreenshotWithTree(t *testing.T) {
	sb := &fakeSandbox{display: desktop.DefaultDisplay, tree: pageTree}
	res := call(t, sb, "sandbox_screenshot", `{"tree": true, "query": "name"}`)
	if res.IsError || len(res.Content) != 3 || res.Content[0].Type != "image" {
		t.Fatalf("want an image, its note and the tree: %+v", res)
	}
	if got := res.Content[2].Text; !strings.Contains(got, `[ref=e4] textbox "Name" focused value="Bob" (50,167 177×21)`) || strings.Contains(got, "e5") {
		t.Errorf("tree: %s", got)
	}
	// Nothing exposes a tree: an error that says why, with the picture.
	sb = &fakeSandbox{display: desktop.DefaultDisplay}
	res = call(t, sb, "sandbox_screenshot", `{"tree": true}`)
	if !res.IsError || len(res.Content) != 3 || !strings.HasPrefix(res.Content[2].Text, "There is no accessibility tree") {
		t.Errorf("empty tree: %+v", res)
	}
}

// TestAnnotations: the tools that only look say so, and no other does.
func TestAnnotations(t *testing.T) {
	var readOnly, destructive []string
	for _, tool := range newSet(&fakeSandbox{}).List() {
		if tool.Annotations == nil {
			t.Fatalf("%s has no annotations", tool.Name)
		}
		if tool.Annotations.ReadOnlyHint {
			readOnly = append(readOnly, tool.Name)
		} else if tool.Annotations.DestructiveHint == nil {
			t.Errorf("%s acts but does not say whether it destroys", tool.Name)
		} else if *tool.Annotations.DestructiveHint {
			destructive = append(destructive, tool.Name)
		}
	}
	if want := []string{"sandbox_screenshot", "sandbox_clipboard_get", "sandbox_wait"}; !slices.Equal(readOnly, want) {
		t.Errorf("read-only: %v, want %v", readOnly, want)
	}
	if want := []string{"sandbox_stop", "sandbox_exec"}; !slices.Equal(destructive, want) {
		t.Errorf("destructive: %v, want %v", destructive, want)
	}
}
