package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// desk is a real sandbox with the tools on it.
type desk struct {
	t       testing.TB
	m       *service.Manager
	set     *tools.Set
	project string
}

func newDesk(t testing.TB, settings string) *desk {
	t.Helper()
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	if settings != "" {
		os.MkdirAll(filepath.Join(dir, ".pilot"), 0o755)
		os.WriteFile(filepath.Join(dir, ".pilot", "settings.json"), []byte(settings), 0o644)
	}
	d := &desk{t: t, m: m, set: tools.New(m), project: dir}
	if res := d.call("sandbox_start", `{}`); res.IsError {
		t.Fatalf("start: %v", res)
	}
	return d
}

func (d *desk) call(name, args string) tools.Result {
	d.t.Helper()
	res, err := d.set.Call(context.Background(), d.project, name, json.RawMessage(args))
	if err != nil {
		d.t.Fatalf("%s: %v", name, err)
	}
	return res
}

func (d *desk) must(name, args string) string {
	d.t.Helper()
	res := d.call(name, args)
	if res.IsError {
		d.t.Fatalf("%s %s: %s", name, args, text(res))
	}
	return text(res)
}

func text(r tools.Result) string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// sh runs a shell command in the sandbox and returns its stdout.
func (d *desk) sh(command string) string {
	d.t.Helper()
	out, err := d.m.Exec(context.Background(), d.project, service.ExecRequest{Command: command, Timeout: 30 * time.Second})
	if err != nil || out.ExitCode != 0 {
		d.t.Fatalf("%s: %v %+v", command, err, out)
	}
	return out.Stdout
}

// poll runs a shell test in the sandbox until it succeeds (dockertest.PollExec).
func (d *desk) poll(what, test string) {
	d.t.Helper()
	dockertest.PollExec(d.t, d.m, d.project, what, test)
}

// xevEvent is one event xev printed.
type xevEvent struct {
	kind   string // ButtonPress, KeyPress, MotionNotify, ...
	rootX  int
	rootY  int
	button int
	keysym string
	state  int64
	time   int64 // the X server's, in milliseconds
}

var (
	xevHead   = regexp.MustCompile(`^(\w+) event, serial`)
	xevRoot   = regexp.MustCompile(`root:\((-?\d+),(-?\d+)\)`)
	xevButton = regexp.MustCompile(`button (\d+),`)
	xevKeysym = regexp.MustCompile(`keysym 0x[0-9a-f]+, (\w+)\)`)
	xevState  = regexp.MustCompile(`state 0x([0-9a-f]+)`)
	xevTime   = regexp.MustCompile(`time (\d+)`)
)

func parseXev(log string) []xevEvent {
	var out []xevEvent
	for _, block := range strings.Split(log, "\n\n") {
		head := xevHead.FindStringSubmatch(strings.TrimSpace(block))
		if head == nil {
			continue
		}
		ev := xevEvent{kind: head[1]}
		if m := xevRoot.FindStringSubmatch(block); m != nil {
			ev.rootX, _ = strconv.Atoi(m[1])
			ev.rootY, _ = strconv.Atoi(m[2])
		}
		if m := xevButton.FindStringSubmatch(block); m != nil {
			ev.button, _ = strconv.Atoi(m[1])
		}
		if m := xevKeysym.FindStringSubmatch(block); m != nil {
			ev.keysym = m[1]
		}
		if m := xevState.FindStringSubmatch(block); m != nil {
			ev.state, _ = strconv.ParseInt(m[1], 16, 64)
		}
		if m := xevTime.FindStringSubmatch(block); m != nil {
			ev.time, _ = strconv.ParseInt(m[1], 10, 64)
		}
		out = append(out, ev)
	}
	return out
}

// openXev puts an xev window over most of the screen, focused. Its log is
// appended to, so that truncating it between steps leaves no gap.
func (d *desk) openXev(geometry string) {
	d.sh(`xev -geometry ` + geometry + ` -event mouse -event keyboard >> /tmp/xev.log 2>&1 &`)
	d.poll("xev window shown", `xdotool search --onlyvisible --name "Event Tester"`)
	d.must("sandbox_click", `{"x": 600, "y": 400}`) // focus it
}

// events returns what xev saw since the last call.
func (d *desk) events() []xevEvent {
	d.t.Helper()
	log := d.sh(`cat /tmp/xev.log; : > /tmp/xev.log`)
	var out []xevEvent
	for _, ev := range parseXev(log) {
		if ev.kind != "EnterNotify" && ev.kind != "LeaveNotify" && ev.kind != "KeymapNotify" {
			out = append(out, ev)
		}
	}
	return out
}

func summary(evs []xevEvent) string {
	var parts []string
	for _, ev := range evs {
		switch ev.kind {
		case "ButtonPress", "ButtonRelease":
			parts = append(parts, fmt.Sprintf("%s%d@%d,%d", strings.TrimPrefix(ev.kind, "Button"), ev.button, ev.rootX, ev.rootY))
		case "KeyPress", "KeyRelease":
			parts = append(parts, fmt.Sprintf("%s:%s/%x", strings.TrimPrefix(ev.kind, "Key"), ev.keysym, ev.state))
		}
	}
	return strings.Join(parts, " ")
}

func TestPointerAndKeysArriveAsXEvents(t *testing.T) {
	d := newDesk(t, "")
	d.openXev("1200x700+0+0")
	d.events()
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"sandbox_click", `{"x": 300, "y": 200}`, "Press1@300,200 Release1@300,200"},
		{"sandbox_click", `{"x": 300, "y": 200}`, "Press1@300,200 Release1@300,200"}, // the same spot again must not hang
		{"sandbox_double_click", `{"x": 310, "y": 210}`, "Press1@310,210 Release1@310,210 Press1@310,210 Release1@310,210"},
		{"sandbox_right_click", `{"x": 320, "y": 220}`, "Press3@320,220 Release3@320,220"},
		{"sandbox_middle_click", `{"x": 330, "y": 230}`, "Press2@330,230 Release2@330,230"},
		{"sandbox_scroll", `{"x": 340, "y": 240, "direction": "up", "amount": 2}`, "Press4@340,240 Release4@340,240 Press4@340,240 Release4@340,240"},
		{"sandbox_scroll", `{"x": 340, "y": 240, "direction": "down", "amount": 1}`, "Press5@340,240 Release5@340,240"},
		{"sandbox_scroll", `{"x": 340, "y": 240, "direction": "left", "amount": 1}`, "Press6@340,240 Release6@340,240"},
		{"sandbox_scroll", `{"x": 340, "y": 240, "direction": "right", "amount": 1}`, "Press7@340,240 Release7@340,240"},
		{"sandbox_key", `{"keys": "Return"}`, "Press:Return/0 Release:Return/0"},
		{"sandbox_key", `{"keys": "ctrl+a"}`, "Press:Control_L/0 Press:a/4 Release:a/4 Release:Control_L/4"},
		{"sandbox_key", `{"keys": "ctrl+shift+x F5"}`, "Press:Control_L/0 Press:Shift_L/4 Press:X/5 Release:X/5 Release:Shift_L/5 Release:Control_L/4 Press:F5/0 Release:F5/0"},
		{"sandbox_key", `{"keys": "A"}`, "Press:Shift_L/0 Press:A/1 Release:A/1 Release:Shift_L/1"},
	} {
		d.must(tc.tool, tc.args)
		if got := summary(d.events()); got != tc.want {
			t.Errorf("%s %s:\n  got  %s\n  want %s", tc.tool, tc.args, got, tc.want)
		}
	}

	d.must("sandbox_hover", `{"x": 500, "y": 500}`)
	evs := d.events()
	if len(evs) == 0 || evs[len(evs)-1].kind != "MotionNotify" || evs[len(evs)-1].rootX != 500 || evs[len(evs)-1].rootY != 500 {
		t.Errorf("hover: %+v", evs)
	}

	d.must("sandbox_drag", `{"startX": 100, "startY": 150, "endX": 400, "endY": 350}`)
	evs = d.events()
	var press, release *xevEvent
	var held int
	for i := range evs {
		switch ev := &evs[i]; {
		case ev.kind == "ButtonPress":
			press = ev
		case ev.kind == "ButtonRelease":
			release = ev
		case ev.kind == "MotionNotify" && ev.state&0x100 != 0:
			held++
		}
	}
	switch {
	case press == nil || press.button != 1 || press.rootX != 100 || press.rootY != 150:
		t.Errorf("drag press: %+v", press)
	case release == nil || release.button != 1 || release.rootX != 400 || release.rootY != 350:
		t.Errorf("drag release: %+v", release)
	case held < 2:
		t.Errorf("drag: %d motions with the button held, want several", held)
	}
}

func TestTypedTextArrivesExactly(t *testing.T) {
	d := newDesk(t, "")
	line := `plain ASCII, then shell: $(id) ` + "`uname`" + ` 'single' "double" \back ; & | > < * ? ~ # ! {}` +
		` then Unicode: ñ Ü ß — “quotes” 中文 日本語 한국어 ✓ 😀 🙂 ` + strings.Repeat("中", 3) +
		`, and 150 distinct CJK characters: `
	for i := range 150 {
		line += string(rune(0x4e00 + i*7))
	}
	d.sh(`xterm -e bash -c 'IFS= read -r line; printf "%s" "$line" > /tmp/typed.txt' >/dev/null 2>&1 &`)
	d.poll("xterm shown", `xdotool search --onlyvisible --class xterm`)
	d.must("sandbox_type", `{"text": `+string(mustJSON(line+"\n"))+`}`)
	d.poll("the line written", `test -e /tmp/typed.txt`)
	got := d.sh(`cat /tmp/typed.txt`)
	if got != line {
		t.Errorf("typed\n%q\ngot\n%q", line, got)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestClipboardRoundTrip(t *testing.T) {
	d := newDesk(t, "")
	if got := d.must("sandbox_clipboard_get", `{}`); got != "The clipboard is empty." {
		t.Errorf("fresh clipboard: %q", got)
	}
	want := "Grüße, 中文 ✓\nsecond line\t$(not run)"
	d.must("sandbox_clipboard_set", `{"text": `+string(mustJSON(want))+`}`)
	if got := d.must("sandbox_clipboard_get", `{}`); got != want {
		t.Errorf("clipboard = %q, want %q", got, want)
	}
	// Other programs in the sandbox see it too.
	if got := d.sh(`xclip -selection clipboard -o`); got != want {
		t.Errorf("xclip sees %q", got)
	}
}

func TestClipboardAfterTheViewerPasted(t *testing.T) {
	d := newDesk(t, "")
	st, err := d.m.Status(context.Background(), d.project)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rfbtest.DialViewer(st.ViewerURL, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// x11vnc then owns the selections but serves no format; the agent reads
	// the cut buffer x11vnc also fills.
	if err := c.CutText("pasted by the user é"); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	d.poll("the viewer's text in the cut buffer", `xprop -root CUT_BUFFER0 | grep -q pasted`)
	if got := d.must("sandbox_clipboard_get", `{}`); got != "pasted by the user é" {
		t.Errorf("clipboard after the viewer pasted: %q", got)
	}
}

func TestScreenshot(t *testing.T) {
	d := newDesk(t, "")
	res := d.call("sandbox_screenshot", `{}`)
	if res.IsError || len(res.Content) != 2 {
		t.Fatalf("%+v", res)
	}
	data := res.Content[0].Data
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil || img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 {
		t.Fatalf("screenshot: %v %v", img.Bounds(), err)
	}
	// The desktop's background colour, from the sandbox's fluxbox style.
	r, g, b, _ := img.At(640, 300).RGBA()
	if r>>8 != 0x2e || g>>8 != 0x34 || b>>8 != 0x40 {
		t.Errorf("pixel (640, 300) = #%02x%02x%02x, want the background #2e3440", r>>8, g>>8, b>>8)
	}
	if !strings.Contains(text(res), "1280x800") {
		t.Errorf("note: %q", text(res))
	}
	// As a JPEG: the same screen, a fraction of the bytes.
	jres := d.call("sandbox_screenshot", `{"format": "jpeg"}`)
	jdata := jres.Content[0].Data
	jimg, err := jpeg.Decode(bytes.NewReader(jdata))
	if err != nil || jres.Content[0].MimeType != "image/jpeg" {
		t.Fatalf("jpeg screenshot: %s %v", jres.Content[0].MimeType, err)
	}
	if jimg.Bounds().Dx() != 1280 || jimg.Bounds().Dy() != 800 {
		t.Fatalf("jpeg screenshot: %v", jimg.Bounds())
	}
	if r, g, b, _ := jimg.At(640, 300).RGBA(); absDiff(r>>8, 0x2e) > 3 || absDiff(g>>8, 0x34) > 3 || absDiff(b>>8, 0x40) > 3 {
		t.Errorf("jpeg pixel (640, 300) = #%02x%02x%02x, want about #2e3440", r>>8, g>>8, b>>8)
	}
}

func absDiff(a, b uint32) uint32 { return max(a, b) - min(a, b) }

func TestLargeDisplayIsScaledBothWays(t *testing.T) {
	d := newDesk(t, `{"sandbox": {"display": {"width": 2560, "height": 1600}}}`)
	res := d.call("sandbox_screenshot", `{}`)
	data := res.Content[0].Data
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width != 1389 || cfg.Height != 868 || !strings.Contains(text(res), "scaled down from the 2560x1600 display") {
		t.Fatalf("screenshot %dx%d %v: %q", cfg.Width, cfg.Height, err, text(res))
	}
	d.openXev("2400x1500+0+0")
	d.events()
	d.must("sandbox_click", `{"x": 694, "y": 434}`)
	if got := summary(d.events()); got != "Press1@1280,800 Release1@1280,800" {
		t.Errorf("a click at the screenshot's centre arrived as %s", got)
	}
}

func TestLifecycleTools(t *testing.T) {
	d := newDesk(t, "")
	// A program started in the background keeps running after the call.
	out := d.must("sandbox_exec", `{"command": "sleep 300 >/dev/null 2>&1 & echo started"}`)
	if !strings.Contains(out, "Exit code 0.") || !strings.Contains(out, "started") {
		t.Errorf("exec: %q", out)
	}
	d.poll("background program running", `pgrep -x sleep`)
	if out := d.must("sandbox_exec", `{"command": "echo out; echo err >&2; exit 3"}`); out != "Exit code 3.\n\nstdout:\nout\n\n\nstderr:\nerr\n" {
		t.Errorf("exec report: %q", out)
	}
	if out := d.must("sandbox_exec", `{"command": "sleep 30", "timeoutSeconds": 1}`); !strings.Contains(out, "killed after 1 seconds") {
		t.Errorf("exec timeout: %q", out)
	}
	d.must("sandbox_wait", `{"seconds": 0.2}`)
	d.must("sandbox_stop", `{}`)
	res := d.call("sandbox_click", `{"x": 1, "y": 1}`)
	if !res.IsError || !strings.Contains(text(res), "sandbox_start") {
		t.Errorf("click on a stopped sandbox: %q", text(res))
	}
	if got := d.must("sandbox_start", `{}`); !strings.Contains(got, "running") {
		t.Errorf("start: %q", got)
	}
	d.must("sandbox_click", `{"x": 1, "y": 1}`)
}
