package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// fakeSandbox records what the tools asked of the desktop.
type fakeSandbox struct {
	display desktop.Display
	stopped bool
	calls   []string
}

func (f *fakeSandbox) Start(ctx context.Context, p string) (service.State, error) {
	f.calls = append(f.calls, "start")
	return service.State{Status: service.StatusRunning, Display: f.display}, nil
}
func (f *fakeSandbox) Stop(ctx context.Context, p string) (service.State, error) {
	f.calls = append(f.calls, "stop")
	return service.State{}, nil
}
func (f *fakeSandbox) Exec(ctx context.Context, p string, r service.ExecRequest) (service.ExecOutput, error) {
	f.calls = append(f.calls, "exec "+r.Command+" "+r.Timeout.String())
	return service.ExecOutput{ExitCode: 2, Stdout: "out", Stderr: "err", TimedOut: true}, nil
}
func (f *fakeSandbox) Desktop(ctx context.Context, p string) (Desktop, error) {
	if f.stopped {
		return nil, service.ErrNotRunning
	}
	return fakeDesktop{f}, nil
}

type fakeDesktop struct{ f *fakeSandbox }

func (d fakeDesktop) log(s string) error { d.f.calls = append(d.f.calls, s); return nil }

func (d fakeDesktop) Display() desktop.Display { return d.f.display }
func (d fakeDesktop) Move(ctx context.Context, x, y int) error {
	return d.log(fmtCall("move", x, y))
}
func (d fakeDesktop) Click(ctx context.Context, x, y, b, n int) error {
	return d.log(fmtCall("click", x, y, b, n))
}
func (d fakeDesktop) Drag(ctx context.Context, x, y, x1, y1 int) error {
	return d.log(fmtCall("drag", x, y, x1, y1))
}
func (d fakeDesktop) Scroll(ctx context.Context, x, y int, dir string, n int) error {
	return d.log(fmtCall("scroll "+dir, x, y, n))
}
func (d fakeDesktop) Type(ctx context.Context, t string) error { return d.log("type " + t) }
func (d fakeDesktop) Keys(ctx context.Context, k string) error {
	if strings.Contains(k, "Nope") {
		return &agentErr{}
	}
	return d.log("key " + k)
}
func (d fakeDesktop) Screenshot(ctx context.Context) (desktop.Screenshot, error) {
	img := image.NewRGBA(image.Rect(0, 0, d.f.display.Width, d.f.display.Height))
	img.Set(0, 0, color.White)
	var b bytes.Buffer
	png.Encode(&b, img)
	return desktop.Screenshot{PNG: b.Bytes(), Width: d.f.display.Width, Height: d.f.display.Height}, nil
}
func (d fakeDesktop) Clipboard(ctx context.Context) (string, bool, error) { return "", true, nil }
func (d fakeDesktop) SetClipboard(ctx context.Context, t string) error    { return d.log("clip " + t) }

type agentErr struct{}

func (*agentErr) Error() string { return service.ErrAgent.Error() + ": unknown key name 'Nope'" }
func (*agentErr) Unwrap() error { return service.ErrAgent }

func fmtCall(op string, n ...int) string {
	b, _ := json.Marshal(n)
	return op + " " + string(b)
}

func call(t *testing.T, sb *fakeSandbox, name, args string) Result {
	t.Helper()
	res, err := newSet(sb).Call(context.Background(), "/p", name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func textOf(r Result) string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestBadArgumentsAreErrorsNamingTheArgument(t *testing.T) {
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"sandbox_click", `{"x": -1, "y": 5}`, `"x" must be at least 0; got -1`},
		{"sandbox_click", `{"x": 1280, "y": 5}`, `"x" is 1280, off the screen: it must be from 0 to 1279`},
		{"sandbox_click", `{"x": 5, "y": 800}`, `"y" is 800, off the screen: it must be from 0 to 799`},
		{"sandbox_click", `{"x": "10", "y": 5}`, `"x" must be an integer; got "10"`},
		{"sandbox_click", `{"x": 1.5, "y": 5}`, `"x" must be an integer; got 1.5`},
		{"sandbox_click", `{"y": 5}`, `"x" is required`},
		{"sandbox_click", `{"x": 1, "y": 5, "button": 2}`, `"button" is not a known field; the fields are x, y`},
		{"sandbox_click", `[1, 2]`, `"arguments" must be an object`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 99999, "endY": 1}`, `"endX" is 99999, off the screen`},
		{"sandbox_scroll", `{"x": 1, "y": 1, "direction": "sideways"}`, `"direction" must be one of up, down, left, right; got "sideways"`},
		{"sandbox_scroll", `{"x": 1, "y": 1, "direction": "up", "amount": 0}`, `"amount" must be from 1 to 100`},
		{"sandbox_scroll", `{"x": 1, "y": 1, "direction": "up", "amount": 101}`, `"amount" must be from 1 to 100`},
		{"sandbox_type", `{"text": ""}`, `"text" must not be empty`},
		{"sandbox_type", `{"text": 5}`, `"text" must be a string`},
		{"sandbox_type", `{"text": "a\u001bb"}`, `"text" has the control character U+001B at position 1`},
		{"sandbox_type", `{"text": "` + strings.Repeat("x", MaxTextLength+1) + `"}`, `"text" must be at most 100000 characters`},
		{"sandbox_key", `{"keys": "$(rm -rf /)"}`, `"keys" has "$(rm", which is not a key name`},
		{"sandbox_key", `{"keys": "ctrl+"}`, `"keys" has "ctrl+", which is not a key name`},
		{"sandbox_key", `{"keys": "ctrl+c; reboot"}`, `which is not a key name`},
		{"sandbox_key", `{"keys": "   "}`, `"keys" must name at least one key`},
		{"sandbox_key", `{"keys": "ctrl+Nope"}`, `"keys" unknown key name 'Nope'`},
		{"sandbox_wait", `{"seconds": 31}`, `"seconds" must be from 0 to 30; got 31`},
		{"sandbox_wait", `{"seconds": -1}`, `"seconds" must be from 0 to 30`},
		{"sandbox_wait", `{"seconds": "5"}`, `"seconds" must be a number`},
		{"sandbox_wait", `{}`, `"seconds" is required: Seconds to wait, 0 to 30.`},
		{"sandbox_exec", `{"command": ""}`, `"command" must not be empty`},
		{"sandbox_exec", `{"command": "ls", "timeoutSeconds": 601}`, `"timeoutSeconds" must be from 1 to 600`},
		{"sandbox_screenshot", `{"x": 1}`, `"x" is not a known field; there are none`},
	} {
		sb := &fakeSandbox{display: desktop.DefaultDisplay}
		res := call(t, sb, tc.tool, tc.args)
		got := textOf(res)
		if !res.IsError || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s:\n  got  %q (isError %v)\n  want %q", tc.tool, truncate(tc.args), got, res.IsError, tc.want)
		}
		for _, c := range sb.calls {
			if !strings.HasPrefix(c, "key ") {
				t.Errorf("%s %s: acted despite bad arguments: %v", tc.tool, truncate(tc.args), sb.calls)
			}
		}
	}
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

func TestToolsDoWhatTheySay(t *testing.T) {
	for _, tc := range []struct {
		tool, args, call, text string
	}{
		{"sandbox_click", `{"x": 10, "y": 20}`, `click [10,20,1,1]`, "Left-clicked at (10, 20)."},
		{"sandbox_double_click", `{"x": 10, "y": 20}`, `click [10,20,1,2]`, "Double-clicked at (10, 20)."},
		{"sandbox_right_click", `{"x": 10, "y": 20}`, `click [10,20,3,1]`, "Right-clicked at (10, 20)."},
		{"sandbox_middle_click", `{"x": 10, "y": 20}`, `click [10,20,2,1]`, "Middle-clicked at (10, 20)."},
		{"sandbox_hover", `{"x": 0, "y": 799}`, `move [0,799]`, "Moved the pointer to (0, 799)."},
		{"sandbox_drag", `{"startX": 1, "startY": 2, "endX": 3, "endY": 4}`, `drag [1,2,3,4]`, "Dragged from (1, 2) to (3, 4)."},
		{"sandbox_scroll", `{"x": 5, "y": 6, "direction": "down"}`, `scroll down [5,6,3]`, "Scrolled down 3 clicks at (5, 6)."},
		{"sandbox_type", `{"text": "héllo\n"}`, "type héllo\n", "Typed 6 characters."},
		{"sandbox_key", `{"keys": "ctrl+a  BackSpace"}`, "key ctrl+a  BackSpace", "Pressed ctrl+a, BackSpace."},
		{"sandbox_clipboard_set", `{"text": ""}`, "clip ", "Put 0 characters on the clipboard."},
		{"sandbox_clipboard_get", `{}`, "", "The clipboard is empty."},
		{"sandbox_exec", `{"command": "ls"}`, "exec ls 2m0s", "Exit code 2. The command was killed after 120 seconds.\n\nstdout:\nout\n\nstderr:\nerr"},
		{"sandbox_start", ``, "start", "The sandbox is running: a 1280x800 Linux desktop"},
		{"sandbox_stop", `null`, "stop", "The sandbox is stopped"},
		{"sandbox_wait", `{"seconds": 0.01}`, "", "Waited 0.01 seconds."},
	} {
		sb := &fakeSandbox{display: desktop.DefaultDisplay}
		res := call(t, sb, tc.tool, tc.args)
		if res.IsError || !strings.HasPrefix(textOf(res), tc.text) {
			t.Errorf("%s: %q (isError %v), want %q", tc.tool, textOf(res), res.IsError, tc.text)
		}
		if got := strings.Join(sb.calls, "|"); got != tc.call {
			t.Errorf("%s: calls %q, want %q", tc.tool, got, tc.call)
		}
	}
}

func TestStoppedSandboxSaysHowToStartIt(t *testing.T) {
	sb := &fakeSandbox{display: desktop.DefaultDisplay, stopped: true}
	for _, name := range []string{"sandbox_click", "sandbox_screenshot", "sandbox_type"} {
		args := map[string]string{"sandbox_click": `{"x":1,"y":1}`, "sandbox_type": `{"text":"a"}`}[name]
		res := call(t, sb, name, args)
		if !res.IsError || !strings.Contains(textOf(res), "not running. Start it with sandbox_start") {
			t.Errorf("%s on a stopped sandbox: %q", name, textOf(res))
		}
	}
}

func TestLargeDisplaysAreScaled(t *testing.T) {
	sb := &fakeSandbox{display: desktop.Display{Width: 2560, Height: 1600}}
	res := call(t, sb, "sandbox_screenshot", `{}`)
	if res.IsError || len(res.Content) != 2 || res.Content[0].Type != "image" || res.Content[0].MimeType != "image/png" {
		t.Fatalf("screenshot: %+v", res)
	}
	data, _ := base64.StdEncoding.DecodeString(res.Content[0].Data)
	img, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil || img.Width != 1568 || img.Height != 980 {
		t.Errorf("scaled screenshot is %dx%d (%v), want 1568x980", img.Width, img.Height, err)
	}
	if note := textOf(res); !strings.Contains(note, "1568x980 pixels, scaled down from the 2560x1600 display") {
		t.Errorf("note = %q", note)
	}
	call(t, sb, "sandbox_click", `{"x": 1567, "y": 979}`)
	call(t, sb, "sandbox_click", `{"x": 784, "y": 490}`)
	if got := strings.Join(sb.calls, "|"); got != "click [2559,1599,1,1]|click [1280,800,1,1]" {
		t.Errorf("clicks mapped to %s", got)
	}
	if res := call(t, sb, "sandbox_click", `{"x": 1568, "y": 0}`); !strings.Contains(textOf(res), "from 0 to 1567 (the screenshot is 1568x980 pixels)") {
		t.Errorf("off the scaled screen: %q", textOf(res))
	}
}

func TestDefaultDisplayIsSentAtFullSize(t *testing.T) {
	sb := &fakeSandbox{display: desktop.DefaultDisplay}
	res := call(t, sb, "sandbox_screenshot", ``)
	data, _ := base64.StdEncoding.DecodeString(res.Content[0].Data)
	img, _ := png.DecodeConfig(bytes.NewReader(data))
	if img.Width != 1280 || img.Height != 800 || !strings.Contains(textOf(res), "whole 1280x800 screen") {
		t.Errorf("screenshot %dx%d: %q", img.Width, img.Height, textOf(res))
	}
}

func TestEveryToolIsDescribed(t *testing.T) {
	list := newSet(&fakeSandbox{}).List()
	if len(list) != 16 {
		t.Errorf("%d tools, want 16", len(list))
	}
	seen := map[string]bool{}
	for _, tool := range list {
		var s struct {
			Type                 string                    `json:"type"`
			Properties           map[string]map[string]any `json:"properties"`
			Required             []string                  `json:"required"`
			AdditionalProperties *bool                     `json:"additionalProperties"`
		}
		raw, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(raw, &s); err != nil || s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: schema %s", tool.Name, raw)
		}
		for name, p := range s.Properties {
			if p["description"] == "" || p["type"] == nil {
				t.Errorf("%s.%s is not described", tool.Name, name)
			}
		}
		if seen[tool.Name] || !strings.HasPrefix(tool.Name, "sandbox_") || len(tool.Description) < 40 {
			t.Errorf("tool %q: %q", tool.Name, tool.Description)
		}
		seen[tool.Name] = true
	}
	if _, err := newSet(&fakeSandbox{}).Call(context.Background(), "/p", "nope", nil); err == nil {
		t.Error("an unknown tool is not an error")
	}
}

// TestOneSidedBoundsSayOneSide: an argument bounded on one side only (a
// coordinate, at least 0) is refused as "at least 0", never "from 0 to
// NaN" (issue 13).
func TestOneSidedBoundsSayOneSide(t *testing.T) {
	for _, tc := range []struct{ tool, args, want string }{
		{"sandbox_click", `{"x": -1, "y": 0}`, `Invalid arguments: argument "x" must be at least 0; got -1.`},
		{"sandbox_hover", `{"x": 0, "y": -5}`, `Invalid arguments: argument "y" must be at least 0; got -5.`},
		{"sandbox_drag", `{"startX": 0, "startY": 0, "endX": -2, "endY": 0}`, `Invalid arguments: argument "endX" must be at least 0; got -2.`},
		{"sandbox_scroll", `{"x": -1, "y": 0, "direction": "up"}`, `Invalid arguments: argument "x" must be at least 0; got -1.`},
	} {
		res := call(t, &fakeSandbox{display: desktop.DefaultDisplay}, tc.tool, tc.args)
		if got := textOf(res); !res.IsError || got != tc.want {
			t.Errorf("%s %s:\n  got  %q\n  want %q", tc.tool, tc.args, got, tc.want)
		}
	}
}
