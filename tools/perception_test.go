package tools_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Perception on a real sandbox of the browser image (the one with the
// accessibility bus): the tree beside the screenshot, acting by ref, and
// waiting until the screen is still. The page and the dialog are in
// testdata/perception.

const browserSettings = `{"sandbox": {"image": "browser"}}`

// serve puts the files of testdata/perception in the sandbox's /tmp/page
// and serves them at http://127.0.0.1:8000/.
func (d *desk) serve(names ...string) {
	d.t.Helper()
	script := "mkdir -p /tmp/page && cd /tmp/page"
	for _, name := range names {
		data, err := os.ReadFile("testdata/perception/" + name)
		if err != nil {
			d.t.Fatal(err)
		}
		script += "\ncat > " + name + " <<'PILOT_EOF'\n" + string(data) + "PILOT_EOF"
	}
	d.sh(script + "\nsetsid python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &")
	d.poll("the page server answers", `python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8000/")'`)
}

// treeUntil takes screenshots with the tree until its text holds want,
// for up to 30 s (a page loads, a window maps, in their own time), and
// returns that text.
func (d *desk) treeUntil(args, want string) string {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := text(d.call("sandbox_screenshot", args))
		if strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the tree never held %q; the last:\n%s", want, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// refOf is the ref of the element of role and name in a tree's text.
func refOf(t testing.TB, tree, role, name string) string {
	t.Helper()
	m := regexp.MustCompile(`\[ref=(e[0-9]+)\] ` + role + ` "` + regexp.QuoteMeta(name) + `"`).FindStringSubmatch(tree)
	if m == nil {
		t.Fatalf("no %s %q in the tree:\n%s", role, name, tree)
	}
	return m[1]
}

func mustSay(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to say %q", what, got, want)
		}
	}
}

// TestTreeOfAPageAndActingByRef: a page's elements are in the tree with
// refs and their places on the screenshot; typing into a field and
// clicking a button by ref reach them (the page then says what it got);
// the result says the screen changed; the button's ref, once the page
// removed it, is an error saying it is gone.
func TestTreeOfAPageAndActingByRef(t *testing.T) {
	d := newDesk(t, browserSettings)
	d.serve("page.html")
	d.sh("pilot-open http://127.0.0.1:8000/page.html")
	tree := d.treeUntil(`{"tree": true}`, `button "Save order"`)
	mustSay(t, "the tree", tree,
		`- Chromium" (0,0 1280×`, `] document "Orders"`, `] heading "Orders"`, `] textbox "Name" (`)
	field, save := refOf(t, tree, "textbox", "Name"), refOf(t, tree, "button", "Save order")

	typed := d.must("sandbox_type", `{"text": "Bob", "ref": "`+field+`"}`)
	mustSay(t, "type by ref", typed, "Typed 3 characters into "+field+` (textbox "Name").`, "The screen changed")
	clicked := d.must("sandbox_click", `{"ref": "`+save+`"}`)
	mustSay(t, "click by ref", clicked, "Left-clicked "+save+` (button "Save order") at (`, "The screen changed")
	// The button removed itself when clicked.
	gone := d.call("sandbox_click", `{"ref": "`+save+`"}`)
	if !gone.IsError || !strings.Contains(text(gone), save+` (button "Save order") is gone`) {
		t.Errorf("a click on a removed button: %+v", gone)
	}
	// The click landed on the button, after the text landed in the field
	// (the page lists the keys it got, and where the focus was for each).
	if got := d.treeUntil(`{"tree": true}`, `"Saved`); !strings.Contains(got, `"Saved Bob"`) {
		t.Errorf("the text typed did not reach the field before the click; the tree then:\n%s", got)
	}
}

// TestWaitUntilStableOnAPage: after a click that starts a 4 s animation (the
// click's own settle time is 2 s at most), sandbox_wait until stable
// returns once the animation has ended (the page says so), and at once on
// a still screen.
func TestWaitUntilStableOnAPage(t *testing.T) {
	d := newDesk(t, browserSettings)
	d.serve("page.html")
	d.sh("pilot-open http://127.0.0.1:8000/page.html")
	animate := refOf(t, d.treeUntil(`{"tree": true}`, `button "Animate"`), "button", "Animate")
	d.must("sandbox_wait", `{"until": "stable"}`) // the page's first paint

	clicked := d.must("sandbox_click", `{"ref": "`+animate+`"}`)
	mustSay(t, "the click that starts it", clicked, "The screen changed")
	waited := d.must("sandbox_wait", `{"until": "stable", "timeoutMs": 20000}`)
	t.Logf("the click: %s\nthe wait: %s", clicked, waited)
	mustSay(t, "the wait", waited, "The screen was still (0.3 s without a change)")
	if got := text(d.call("sandbox_screenshot", `{"tree": true, "query": "animation done"}`)); !strings.Contains(got, `"Animation done"`) {
		t.Errorf("sandbox_wait returned before the animation ended: %s\nthe tree then:\n%s", waited, got)
	}
	mustSay(t, "a wait on a still screen", d.must("sandbox_wait", `{"until": "stable"}`), "The screen was already still")
}

// TestTreeOfAGTKDialog: a GTK program's dialog is in the tree through
// AT-SPI, above the browser's page, and its button clicked by ref answers
// it.
func TestTreeOfAGTKDialog(t *testing.T) {
	d := newDesk(t, browserSettings)
	d.serve("page.html", "dialog.py")
	d.sh("pilot-open http://127.0.0.1:8000/page.html")
	d.treeUntil(`{"tree": true}`, `button "Save order"`)
	d.sh("setsid python3 /tmp/page/dialog.py > /tmp/dialog.log 2>&1 < /dev/null &")
	tree := d.treeUntil(`{"tree": true}`, `button "Yes"`)
	dialog := regexp.MustCompile(`(?m)^\[ref=e[0-9]+\] alert "Question" modal .*\n  \[ref=e[0-9]+\] label "Delete the file\?"`)
	if !dialog.MatchString(tree) || strings.Index(tree, `button "Yes"`) > strings.Index(tree, `button "Save order"`) {
		t.Errorf("the dialog is not at the top of the tree, with its label:\n%s", tree)
	}
	yes := refOf(t, tree, "button", "Yes")
	mustSay(t, "click by ref", d.must("sandbox_click", `{"ref": "`+yes+`"}`), "Left-clicked "+yes+` (button "Yes")`)
	d.poll("the dialog answered yes", "grep -qx 'answer -8' /tmp/dialog.log")
}

// BenchmarkTree: sandbox_screenshot with tree: true on a typical page (a
// news article with the site's navigation, a search form, a table,
// related links and a footer: testdata/perception/article.html), beside
// the screenshot alone; with the tree's size as the model reads it, in
// bytes and in tokens counted as characters/4 (docs/agent-tools.md).
func BenchmarkTree(b *testing.B) {
	d := newDesk(b, browserSettings)
	d.serve("article.html")
	d.sh("pilot-open http://127.0.0.1:8000/article.html")
	d.treeUntil(`{"tree": true}`, `searchbox "Search"`)
	for _, args := range []string{`{}`, `{"tree": true}`} {
		b.Run(args, func(b *testing.B) {
			var got string
			for b.Loop() {
				got = text(d.call("sandbox_screenshot", args))
			}
			if args == `{}` {
				return
			}
			b.ReportMetric(float64(len(got)), "bytes/tree")
			b.ReportMetric(float64(len([]rune(got)))/4, "tokens/tree")
			b.ReportMetric(float64(strings.Count(got, "[ref=")), "elements/tree")
			b.Logf("the tree:\n%s", got)
		})
	}
}

// TestTreeOfWindowsThatExposeNone: on the desktop image (no accessibility
// bus) an xterm exposes no tree: the result is an error that lists the
// window and says why, the screenshot still in it.
func TestTreeOfWindowsThatExposeNone(t *testing.T) {
	d := newDesk(t, "")
	d.sh("xterm -T plain -geometry 40x10+100+100 -e sleep 600 >/dev/null 2>&1 &") // no shell, which would retitle it
	d.poll("the xterm shown", `xdotool search --onlyvisible --name plain`)
	res := d.call("sandbox_screenshot", `{"tree": true}`)
	if !res.IsError || len(res.Content) != 3 || res.Content[0].Type != "image" {
		t.Fatalf("want an error with the screenshot and the text: %+v", res)
	}
	mustSay(t, "the tree", text(res), "There is no accessibility tree: nothing on the screen exposes one.",
		`] window "plain" (`, "exposes no accessibility tree", "this sandbox has no accessibility bus")
}

// TestTypeByRefWaitsForTheFocus: typing by ref into a field that takes the
// focus late (it gives it away, then takes it back 1.5 s later:
// testdata/perception/late.html) types into that field, not into the one
// that held the focus meanwhile; into a field that never keeps the focus,
// it is an error saying so, and nothing is typed.
func TestTypeByRefWaitsForTheFocus(t *testing.T) {
	d := newDesk(t, browserSettings)
	d.serve("late.html")
	d.sh("pilot-open http://127.0.0.1:8000/late.html")
	tree := d.treeUntil(`{"tree": true}`, `textbox "Never"`)
	name, never := refOf(t, tree, "textbox", "Name"), refOf(t, tree, "textbox", "Never")

	mustSay(t, "type by ref", d.must("sandbox_type", `{"text": "Bob", "ref": "`+name+`"}`),
		"Typed 3 characters into "+name+` (textbox "Name").`)
	// The status says what each field holds and where each key went.
	const typed = `"Name [Bob], Search [], keys [Shift@who B@who o@who b@who]"`
	mustSay(t, "where the keys went", d.treeUntil(`{"tree": true, "query": "search"}`, `Bob]`), typed)

	refused := d.call("sandbox_type", `{"text": "Eve", "ref": "`+never+`"}`)
	if !refused.IsError {
		t.Errorf("typing into a field that never keeps the focus: %+v", refused)
	}
	mustSay(t, "type into a field that never keeps the focus", text(refused),
		never+` (textbox "Never") did not take the keyboard focus within 5 s (it is on input#search)`)
	if got := text(d.call("sandbox_screenshot", `{"tree": true, "query": "search"}`)); !strings.Contains(got, typed) {
		t.Errorf("a refused type by ref typed something:\n%s", got)
	}
}

// TestTypeByRefIntoAGTKField: typing by ref into a GTK program's field
// that takes the focus late (it gives it away, then takes it back 1.5 s
// later: testdata/perception/entry.py) gives it the focus through AT-SPI,
// waits until it says it is focused, and types into it, not into the
// field that held the focus meanwhile.
func TestTypeByRefIntoAGTKField(t *testing.T) {
	d := newDesk(t, browserSettings)
	d.serve("entry.py")
	d.sh("setsid python3 /tmp/page/entry.py > /tmp/entry.log 2>&1 < /dev/null &")
	tree := d.treeUntil(`{"tree": true}`, `textbox "Name"`)
	name := refOf(t, tree, "textbox", "Name")
	mustSay(t, "type by ref", d.must("sandbox_type", `{"text": "Bob", "ref": "`+name+`"}`),
		"Typed 3 characters into "+name+` (textbox "Name").`)
	got := d.treeUntil(`{"tree": true}`, `value="Bob"`)
	mustSay(t, "the fields", got, `textbox "Other" (`, `textbox "Name" focused value="Bob" (`)
}
