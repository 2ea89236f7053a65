package tools_test

// The tools' newer arguments, each proven on a real sandbox by what it
// does: a selection a terminal makes, the modifier state X events carry, a
// window moved, a key's repeats, the pixels of a zoom, the file holding an
// exec's output.

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// window is where an X window is, in display pixels.
type window struct{ x, y, w, h int }

var xwininfoField = regexp.MustCompile(`(?m)^\s*(Absolute upper-left X|Absolute upper-left Y|Width|Height):\s+(-?\d+)$`)

// window finds the window titled name with xwininfo.
func (d *desk) window(name string) window {
	d.t.Helper()
	f := map[string]int{}
	for _, m := range xwininfoField.FindAllStringSubmatch(d.sh(`xwininfo -name `+name), -1) {
		f[m[1]], _ = strconv.Atoi(m[2])
	}
	return window{f["Absolute upper-left X"], f["Absolute upper-left Y"], f["Width"], f["Height"]}
}

// openText opens an xterm titled name, cols x rows characters at +100+100,
// showing text, and waits until it has it. extra are more xterm options.
func (d *desk) openText(name, size, extra, text string) window {
	d.t.Helper()
	d.sh(fmt.Sprintf(`printf '%%s' %s > /tmp/%s.txt`, shellQuote(text), name))
	d.sh(fmt.Sprintf(`xterm -title %s -geometry %s+100+100 %s -e sh -c 'cat /tmp/%s.txt; touch /tmp/%s.ready; exec sleep 100000' >/dev/null 2>&1 &`,
		name, size, extra, name, name))
	d.poll(name+" shown", fmt.Sprintf(`test -e /tmp/%s.ready && xwininfo -name %s | grep -q IsViewable`, name, name))
	return d.window(name)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// cell is the centre of the character cell at col, row of a terminal of
// cols x rows characters in w.
func (w window) cell(col, row, cols, rows int) string {
	return fmt.Sprintf(`"x": %d, "y": %d`, w.x+(2*col+1)*w.w/(2*cols), w.y+(2*row+1)*w.h/(2*rows))
}

// primary polls the PRIMARY selection (what a terminal has selected, once
// it has handled the clicks) until it is want, and returns the last read.
func (d *desk) primary(want string) string {
	d.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := d.m.Exec(context.Background(), d.project, service.ExecRequest{
			Command: `xclip -o -selection primary 2>/dev/null`, Timeout: 10 * time.Second})
		if err != nil {
			d.t.Fatal(err)
		}
		if out.Stdout == want || time.Now().After(deadline) {
			return out.Stdout
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTripleClickSelectsALine(t *testing.T) {
	d := newDesk(t, "")
	w := d.openText("lines", "80x10", "", "alpha beta gamma delta\nsecond line here\nthird\n")
	for _, tc := range []struct {
		args, want string
	}{
		// A line, as xterm selects it: with its newline.
		{`{` + w.cell(3, 1, 80, 10) + `, "count": 3}`, "second line here\n"},
		{`{` + w.cell(20, 0, 80, 10) + `, "count": 3}`, "alpha beta gamma delta\n"},
		{`{` + w.cell(8, 0, 80, 10) + `, "count": 2}`, "beta"},
	} {
		d.must("sandbox_click", `{"x": 1000, "y": 600}`) // away, so that clicks do not run together
		d.must("sandbox_wait", `{"seconds": 0.5}`)       // past the terminal's double-click time
		d.must("sandbox_click", tc.args)
		if got := d.primary(tc.want); got != tc.want {
			t.Errorf("click %s selected %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestShiftClickExtendsASelection(t *testing.T) {
	d := newDesk(t, "")
	// xterm extends a selection with button 3; bound to shift+button 1 here,
	// it extends only when shift is down as the button goes down.
	w := d.openText("extend", "80x10", `-xrm 'XTerm*VT100.translations: #override Shift <Btn1Down>: start-extend()'`,
		"alpha beta gamma delta\n")
	d.must("sandbox_double_click", `{`+w.cell(2, 0, 80, 10)+`}`)
	if got := d.primary("alpha"); got != "alpha" {
		t.Fatalf("double click selected %q", got)
	}
	d.must("sandbox_wait", `{"seconds": 0.5}`)
	d.must("sandbox_click", `{`+w.cell(13, 0, 80, 10)+`, "modifiers": ["shift"]}`)
	if got := d.primary("alpha beta gamma"); got != "alpha beta gamma" {
		t.Errorf("shift+click selected %q, want the selection extended to %q", got, "alpha beta gamma")
	}
}

// TestModifiersArriveWithTheirButtons: each mouse tool's modifiers are in
// the state of its button events, as an application reads them (ctrl+scroll
// is how a page zooms).
func TestModifiersArriveWithTheirButtons(t *testing.T) {
	d := newDesk(t, "")
	d.openXev("1200x700+0+0")
	d.events()
	const shift, ctrl, super = 0x1, 0x4, 0x40
	for _, tc := range []struct {
		tool, args string
		presses    string // the button presses' buttons
		state      int64
	}{
		{"sandbox_click", `{"x": 300, "y": 200, "modifiers": ["ctrl"]}`, "1", ctrl},
		{"sandbox_click", `{"x": 300, "y": 200, "count": 3, "modifiers": ["shift"]}`, "1 1 1", shift},
		{"sandbox_double_click", `{"x": 300, "y": 200, "modifiers": ["ctrl", "shift"]}`, "1 1", ctrl | shift},
		{"sandbox_right_click", `{"x": 300, "y": 200, "modifiers": ["super"]}`, "3", super},
		{"sandbox_middle_click", `{"x": 300, "y": 200, "modifiers": ["shift"]}`, "2", shift},
		{"sandbox_scroll", `{"x": 300, "y": 200, "direction": "up", "amount": 2, "modifiers": ["ctrl"]}`, "4 4", ctrl},
		{"sandbox_drag", `{"startX": 100, "startY": 100, "endX": 300, "endY": 200, "modifiers": ["ctrl"]}`, "1", ctrl},
		{"sandbox_click", `{"x": 300, "y": 200}`, "1", 0},
	} {
		d.must(tc.tool, tc.args)
		var presses []string
		for _, ev := range d.events() {
			if ev.kind == "ButtonPress" {
				presses = append(presses, strconv.Itoa(ev.button))
				if got := ev.state & (shift | ctrl | 0x8 | super); got != tc.state {
					t.Errorf("%s %s: a press's modifier state is %#x, want %#x", tc.tool, tc.args, got, tc.state)
				}
			}
		}
		if got := strings.Join(presses, " "); got != tc.presses {
			t.Errorf("%s %s: presses %q, want %q", tc.tool, tc.args, got, tc.presses)
		}
	}
}

func TestDragFollowsItsPathForItsDuration(t *testing.T) {
	d := newDesk(t, "")
	d.openXev("1200x700+0+0")
	d.events()
	out := d.must("sandbox_drag", `{"startX": 100, "startY": 100, "endX": 300, "endY": 400, "path": [[600, 100], [600, 400]], "durationMs": 800}`)
	if !strings.Contains(out, "through 2 points over 800 ms. The pointer is at (300, 400).") {
		t.Errorf("drag: %q", out)
	}
	var press, release *xevEvent
	var held []string
	evs := d.events()
	for i := range evs {
		switch ev := &evs[i]; {
		case ev.kind == "ButtonPress":
			press = ev
		case ev.kind == "ButtonRelease":
			release = ev
		case ev.kind == "MotionNotify" && ev.state&0x100 != 0:
			held = append(held, fmt.Sprintf("%d,%d", ev.rootX, ev.rootY))
		}
	}
	if press == nil || release == nil {
		t.Fatalf("no press and release: %+v", evs)
	}
	// Through both corners, in order, with the button down.
	route := strings.Join(held, " ")
	first, second := strings.Index(route, "600,100 "), strings.Index(route, "600,400 ")
	if first < 0 || second < first || !strings.HasSuffix(route, "300,400") {
		t.Errorf("the held pointer went %s", route)
	}
	// The X server's clock, in milliseconds: the button was held at least
	// the duration.
	if release.time-press.time < 800 {
		t.Errorf("held %d ms, want at least 800", release.time-press.time)
	}
	// Wherever something else put it, hover without a point says where the
	// pointer is.
	d.sh(`xdotool mousemove 123 456`)
	if got := d.must("sandbox_hover", `{}`); got != "The pointer is at (123, 456)." {
		t.Errorf("hover: %q", got)
	}
}

func TestAltDragMovesAWindow(t *testing.T) {
	d := newDesk(t, "")
	before := d.openText("moved", "40x5", "", "drag me\n")
	// fluxbox moves a window dragged with alt held anywhere in it; without
	// alt, the drag would select text in the terminal.
	d.must("sandbox_drag", fmt.Sprintf(`{"startX": %d, "startY": %d, "endX": %d, "endY": %d, "modifiers": ["alt"]}`,
		before.x+50, before.y+30, before.x+250, before.y+180))
	d.poll("the window moved", fmt.Sprintf(`xwininfo -name moved | grep -q 'Absolute upper-left X:  %d$'`, before.x+200))
	if after := d.window("moved"); after.x != before.x+200 || after.y != before.y+150 {
		t.Errorf("window at %+v after an alt+drag of (200, 150) from %+v", after, before)
	}
}

func TestHeldKeyRepeats(t *testing.T) {
	d := newDesk(t, "")
	d.openXev("1200x700+0+0")
	d.events()
	count := func(args string) (presses int, last string) {
		d.must("sandbox_key", args)
		for _, ev := range d.events() {
			if ev.kind == "KeyPress" && ev.keysym == "a" {
				presses++
			}
			if ev.kind == "KeyPress" || ev.kind == "KeyRelease" {
				last = ev.kind + ":" + ev.keysym
			}
		}
		return presses, last
	}
	if n, last := count(`{"keys": "a"}`); n != 1 || last != "KeyRelease:a" {
		t.Errorf("a key pressed: %d presses, last %s", n, last)
	}
	// Held past the server's autorepeat delay (660 ms, then 25 a second).
	if n, last := count(`{"keys": "a", "holdMs": 1500}`); n < 6 || last != "KeyRelease:a" {
		t.Errorf("a key held 1.5 s: %d presses, last %s; want it to repeat, then be released", n, last)
	}
}

func TestZoomShowsSmallTextAtFullResolution(t *testing.T) {
	d := newDesk(t, `{"sandbox": {"display": {"width": 2560, "height": 1600}}}`)
	w := d.openText("tiny", "30x3", "-fs 6", "small print 0123456789\n")
	// The terminal's place in screenshot pixels (1389x868 for 2560x1600).
	toShot := func(r image.Rectangle) image.Rectangle {
		return image.Rect(r.Min.X*1389/2560, r.Min.Y*868/1600, r.Max.X*1389/2560+1, r.Max.Y*868/1600+1)
	}
	region := toShot(image.Rect(w.x, w.y, w.x+w.w, w.y+w.h))
	res := d.call("sandbox_screenshot", fmt.Sprintf(`{"region": [%d, %d, %d, %d]}`, region.Min.X, region.Min.Y, region.Max.X, region.Max.Y))
	zoomed := decodePNG(t, res)
	// Exactly the display's pixels there, at its full resolution.
	full := d.fullScreenshot()
	grabbed := image.Rect(region.Min.X*2560/1389, region.Min.Y*1600/868, (region.Max.X*2560+1388)/1389, (region.Max.Y*1600+867)/868)
	if zoomed.Bounds().Size() != grabbed.Size() {
		t.Fatalf("zoom of %v is %v, want the display's %v", region, zoomed.Bounds().Size(), grabbed)
	}
	for y := range grabbed.Dy() {
		for x := range grabbed.Dx() {
			if zoomed.At(x, y) != full.At(grabbed.Min.X+x, grabbed.Min.Y+y) {
				t.Fatalf("zoom pixel (%d, %d) is not display pixel %v", x, y, grabbed.Min.Add(image.Pt(x, y)))
			}
		}
	}
	// The line of text is 1.84 times as long as in the screenshot, where
	// its glyphs are a few pixels high and smudged.
	line := image.Rect(w.x+3, w.y, w.x+w.w-3, w.y+w.h/3) // the first row, inside the borders
	shot := decodePNG(t, d.call("sandbox_screenshot", `{}`))
	inZoom, inShot := inkWidth(zoomed, line.Sub(grabbed.Min)), inkWidth(shot, toShot(line))
	t.Logf("the line of text is %d pixels long zoomed, %d in the screenshot", inZoom, inShot)
	if ratio := float64(inZoom) / float64(inShot); inShot == 0 || ratio < 1.7 || ratio > 2.0 {
		t.Errorf("the text is %d pixels long zoomed, %d in the screenshot: ratio %.2f, want about 1.84", inZoom, inShot, ratio)
	}
	if note := text(res); !strings.Contains(note, "1.843 times the screenshot's size") {
		t.Errorf("zoom note: %q", note)
	}
}

func decodePNG(t *testing.T, res tools.Result) image.Image {
	t.Helper()
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("screenshot: %q", text(res))
	}
	data := res.Content[0].Data
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// fullScreenshot is the display at full size, as sandbox/screenshot gives it.
func (d *desk) fullScreenshot() image.Image {
	d.t.Helper()
	shot, err := d.m.Screenshot(context.Background(), d.project)
	if err != nil {
		d.t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil {
		d.t.Fatal(err)
	}
	return img
}

// inkWidth is how many columns of r, from the first to the last, hold
// text: pixels darker than a terminal's white, smudged or not.
func inkWidth(img image.Image, r image.Rectangle) int {
	first, last := -1, -1
	for x := r.Min.X; x < r.Max.X; x++ {
		for y := r.Min.Y; y < r.Max.Y; y++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 < 0xC0 && g>>8 < 0xC0 && b>>8 < 0xC0 {
				if first < 0 {
					first = x
				}
				last = x
				break
			}
		}
	}
	if first < 0 {
		return 0
	}
	return last - first + 1
}

func TestExecOutputIsCutWithTheWholeInAFile(t *testing.T) {
	d := newDesk(t, "")
	out := d.must("sandbox_exec", `{"command": "seq 1 200000"}`)
	m := regexp.MustCompile(`cut here; the whole output is in (/tmp/pilot-exec/\S+\.log) in the sandbox`).FindStringSubmatch(out)
	if m == nil || len([]rune(out)) > 16000 || !strings.HasPrefix(out, "Exit code 0.\n\nstdout:\n1\n2\n3\n") ||
		!strings.HasSuffix(out, "\n199999\n200000\n") {
		t.Fatalf("exec of 1.3 MB: %d characters: %.300q … %q", len(out), out, out[max(0, len(out)-200):])
	}
	// The file, the sandbox user's, holds every line.
	if got := d.sh(`stat -c %U ` + m[1] + `; tail -n +4 ` + m[1] + ` | cmp - <(seq 1 200000) && echo whole`); got != "sandbox\nwhole\n" {
		t.Errorf("the file %s: %q", m[1], got)
	}
}
