package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

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
		{"sandbox_click", `{"x": 1, "y": 5, "button": 2}`, `"button" is not a known field; the fields are x, y, ref, modifiers, count`},
		{"sandbox_click", `{"x": 1, "y": 5, "count": 4}`, `"count" must be from 1 to 3; got 4`},
		{"sandbox_click", `{"x": 1, "y": 5, "count": 0}`, `"count" must be from 1 to 3; got 0`},
		{"sandbox_click", `{"x": 1, "y": 5, "modifiers": ["hyper"]}`, `"modifiers[0]" must be one of ctrl, shift, alt, super; got "hyper"`},
		{"sandbox_click", `{"x": 1, "y": 5, "modifiers": "ctrl"}`, `"modifiers" must be an array; got "ctrl"`},
		{"sandbox_click", `{"x": 1, "y": 5, "modifiers": ["ctrl", "shift", "alt", "super", "ctrl"]}`, `"modifiers" must have at most 4 items; got 5`},
		{"sandbox_double_click", `{"x": 1, "y": 5, "count": 3}`, `"count" is not a known field; the fields are x, y, ref, modifiers`},
		{"sandbox_right_click", `{"x": 1, "y": 5, "modifiers": ["Control"]}`, `"modifiers[0]" must be one of ctrl, shift, alt, super`},
		{"sandbox_middle_click", `{"x": 1, "y": 800, "modifiers": ["alt"]}`, `"y" is 800, off the screen`},
		{"sandbox_hover", `{"x": 5}`, `"y" is required with the other coordinate: give both x and y, or neither`},
		{"sandbox_hover", `{"y": 5}`, `"x" is required with the other coordinate`},
		{"sandbox_hover", `{"x": 1280, "y": 5}`, `"x" is 1280, off the screen`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 2, "endY": 2, "path": [[1]]}`, `"path[0]" must have exactly 2 items; got 1`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 2, "endY": 2, "path": [[3, 4], [1, 9999]]}`, `"path[1][1]" is 9999, off the screen: it must be from 0 to 799`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 2, "endY": 2, "path": [[-1, 4]]}`, `"path[0][0]" must be at least 0; got -1`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 2, "endY": 2, "path": ` + points(101) + `}`, `"path" must have at most 100 items; got 101`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 2, "endY": 2, "durationMs": 0}`, `"durationMs" must be from 1 to 10000; got 0`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 2, "endY": 2, "durationMs": 10001}`, `"durationMs" must be from 1 to 10000`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 2, "endY": 2, "modifiers": ["meta"]}`, `"modifiers[0]" must be one of`},
		{"sandbox_scroll", `{"x": 1, "y": 1, "direction": "up", "modifiers": ["ctrl", 5]}`, `"modifiers[1]" must be a string; got 5`},
		{"sandbox_key", `{"keys": "a b", "holdMs": 100}`, `"keys" names 2 combinations; with holdMs, name the one to hold`},
		{"sandbox_key", `{"keys": "a", "holdMs": 10001}`, `"holdMs" must be from 1 to 10000; got 10001`},
		{"sandbox_key", `{"keys": "a", "holdMs": 0}`, `"holdMs" must be from 1 to 10000; got 0`},
		{"sandbox_screenshot", `{"format": "gif"}`, `"format" must be one of png, jpeg; got "gif"`},
		{"sandbox_screenshot", `{"quality": 50}`, `"quality" applies to JPEG only: add "format": "jpeg"`},
		{"sandbox_screenshot", `{"format": "png", "quality": 50}`, `"quality" applies to JPEG only`},
		{"sandbox_screenshot", `{"format": "jpeg", "quality": 0}`, `"quality" must be from 1 to 100; got 0`},
		{"sandbox_screenshot", `{"format": "jpeg", "quality": 101}`, `"quality" must be from 1 to 100; got 101`},
		{"sandbox_screenshot", `{"region": [1, 2, 3]}`, `"region" must have exactly 4 items; got 3`},
		{"sandbox_screenshot", `{"region": [-1, 2, 3, 4]}`, `"region[0]" must be at least 0; got -1`},
		{"sandbox_screenshot", `{"region": [10, 10, 5, 20]}`, `"region" must be [x1, y1, x2, y2] with x1 < x2 and y1 < y2, the corners of a rectangle; got [10 10 5 20]`},
		{"sandbox_screenshot", `{"region": [10, 10, 20, 10]}`, `"region" must be [x1, y1, x2, y2] with x1 < x2 and y1 < y2`},
		{"sandbox_screenshot", `{"region": [0, 0, 1281, 800]}`, `"region" reaches past the screenshot, which is 1280x800 pixels; got [0 0 1281 800]`},
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
		{"sandbox_wait", `{}`, `"seconds" is required: the seconds to wait (0 to 30), or until "stable" instead`},
		{"sandbox_wait", `{"seconds": 1, "until": "stable"}`, `"until" waits instead of seconds: give seconds, or until, not both`},
		{"sandbox_wait", `{"seconds": 1, "timeoutMs": 500}`, `"timeoutMs" applies to until and handOver only`},
		{"sandbox_wait", `{"until": "loaded"}`, `"until" must be one of stable; got "loaded"`},
		{"sandbox_wait", `{"until": "stable", "timeoutMs": 30001}`, `"timeoutMs" must be from 1 to 30000; got 30001`},
		{"sandbox_click", `{"y": 5}`, `"x" is required: give x and y (pixels of the latest screenshot), or ref (an element of its tree)`},
		{"sandbox_click", `{"x": 5}`, `"y" is required: give x and y`},
		{"sandbox_click", `{"x": 5, "y": 5, "ref": "e1"}`, `"ref" names an element to click instead of x and y: give ref, or x and y, not both`},
		{"sandbox_click", `{"ref": "button"}`, `"ref" must be a ref from the tree of sandbox_screenshot with tree: true, like e12; got "button"`},
		{"sandbox_right_click", `{"ref": "e7"}`, `"ref" e7 (button "Save") is gone: the page changed or was left`},
		{"sandbox_type", `{"text": "a", "ref": "e0"}`, `"ref" must be a ref from the tree`},
		{"sandbox_type", `{"text": "a", "ref": "e7"}`, `"ref" e7 (button "Save") is gone`},
		{"sandbox_screenshot", `{"query": "save"}`, `"query" applies to the tree only: add "tree": true, or leave it out`},
		{"sandbox_screenshot", `{"scope": "e1"}`, `"scope" applies to the tree only`},
		{"sandbox_screenshot", `{"maxNodes": 10}`, `"maxNodes" applies to the tree only`},
		{"sandbox_screenshot", `{"tree": true, "maxNodes": 0}`, `"maxNodes" must be from 1 to 3000; got 0`},
		{"sandbox_screenshot", `{"tree": true, "scope": "window"}`, `"scope" must be a ref from the tree`},
		{"sandbox_screenshot", `{"tree": true, "query": ""}`, `"query" must not be empty`},
		{"sandbox_exec", `{"command": ""}`, `"command" must not be empty`},
		{"sandbox_exec", `{"command": "ls", "timeoutSeconds": 601}`, `"timeoutSeconds" must be from 1 to 600`},
		{"sandbox_screenshot", `{"x": 1}`, `"x" is not a known field; the fields are format, quality, region, tree, query, scope, maxNodes`},
		{"sandbox_stop", `{"x": 1}`, `"x" is not a known field; there are none`},
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

// points is a JSON array of n points.
func points(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("[1, 1],", n), ",") + "]"
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
		{"sandbox_click", `{"x": 10, "y": 20}`, `click [10,20,1,1]`, "Left-clicked at (10, 20). The pointer is at (10, 20)."},
		{"sandbox_click", `{"x": 10, "y": 20, "count": 3, "modifiers": ["ctrl", "shift", "ctrl"]}`, `click [10,20,1,3] +ctrl+shift`,
			"Triple-clicked at (10, 20) holding ctrl+shift. The pointer is at (10, 20)."},
		{"sandbox_click", `{"x": 10, "y": 20, "count": 2, "modifiers": []}`, `click [10,20,1,2]`, "Double-clicked at (10, 20)."},
		{"sandbox_double_click", `{"x": 10, "y": 20}`, `click [10,20,1,2]`, "Double-clicked at (10, 20)."},
		{"sandbox_double_click", `{"x": 10, "y": 20, "modifiers": ["super"]}`, `click [10,20,1,2] +super`, "Double-clicked at (10, 20) holding super."},
		{"sandbox_right_click", `{"x": 10, "y": 20}`, `click [10,20,3,1]`, "Right-clicked at (10, 20)."},
		{"sandbox_right_click", `{"x": 10, "y": 20, "modifiers": ["alt"]}`, `click [10,20,3,1] +alt`, "Right-clicked at (10, 20) holding alt."},
		{"sandbox_middle_click", `{"x": 10, "y": 20}`, `click [10,20,2,1]`, "Middle-clicked at (10, 20)."},
		{"sandbox_middle_click", `{"x": 10, "y": 20, "modifiers": ["shift"]}`, `click [10,20,2,1] +shift`, "Middle-clicked at (10, 20) holding shift."},
		{"sandbox_hover", `{"x": 0, "y": 799}`, `move [0,799]`, "Moved the pointer to (0, 799). The pointer is at (0, 799)."},
		{"sandbox_hover", `{}`, ``, "The pointer is at (0, 0)."},
		{"sandbox_drag", `{"startX": 1, "startY": 2, "endX": 3, "endY": 4}`, `drag [1,2,3,4]`,
			"Dragged from (1, 2) to (3, 4). The pointer is at (3, 4)."},
		{"sandbox_drag", `{"startX": 1, "startY": 2, "endX": 3, "endY": 4, "path": [[5, 6], [7, 8]], "durationMs": 250, "modifiers": ["shift"]}`,
			`drag [1,2,5,6,7,8,3,4] 250ms +shift`, "Dragged from (1, 2) to (3, 4) through 2 points over 250 ms holding shift. The pointer is at (3, 4)."},
		{"sandbox_scroll", `{"x": 5, "y": 6, "direction": "down"}`, `scroll down [5,6,3]`, "Scrolled down 3 clicks at (5, 6). The pointer is at (5, 6)."},
		{"sandbox_scroll", `{"x": 5, "y": 6, "direction": "up", "amount": 1, "modifiers": ["ctrl"]}`, `scroll up [5,6,1] +ctrl`,
			"Scrolled up 1 click at (5, 6) holding ctrl."},
		{"sandbox_type", `{"text": "héllo\n"}`, "type héllo\n", "Typed 6 characters. The pointer is at (0, 0)."},
		{"sandbox_key", `{"keys": "ctrl+a  BackSpace"}`, "key ctrl+a  BackSpace", "Pressed ctrl+a, BackSpace. The pointer is at (0, 0)."},
		{"sandbox_key", `{"keys": " shift ", "holdMs": 1500}`, "hold shift 1.5s", "Held shift down for 1500 ms. The pointer is at (0, 0)."},
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
			t.Errorf("%s %s: %q (isError %v), want %q", tc.tool, tc.args, textOf(res), res.IsError, tc.text)
		}
		if got := strings.Join(sb.calls, "|"); got != tc.call {
			t.Errorf("%s %s: calls %q, want %q", tc.tool, tc.args, got, tc.call)
		}
	}
}

// TestActionsSayWhereThePointerIs: after every action, in screenshot
// pixels, wherever the pointer went.
func TestActionsSayWhereThePointerIs(t *testing.T) {
	for _, tc := range []struct{ tool, args string }{
		{"sandbox_click", `{"x": 1, "y": 1}`},
		{"sandbox_double_click", `{"x": 1, "y": 1}`},
		{"sandbox_right_click", `{"x": 1, "y": 1}`},
		{"sandbox_middle_click", `{"x": 1, "y": 1}`},
		{"sandbox_hover", `{}`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 1, "endY": 1}`},
		{"sandbox_scroll", `{"x": 1, "y": 1, "direction": "up"}`},
		{"sandbox_type", `{"text": "a"}`},
		{"sandbox_key", `{"keys": "a"}`},
	} {
		// The display is scaled: (2559, 1599) is the screenshot's (1388, 867).
		sb := &fakeSandbox{display: desktop.Display{Width: 2560, Height: 1600}, pointer: image.Pt(2559, 1599)}
		res := call(t, sb, tc.tool, tc.args)
		want := "The pointer is at (1388, 867)."
		if tc.tool != "sandbox_type" && tc.tool != "sandbox_key" && tc.tool != "sandbox_hover" {
			want = "The pointer is at (1, 1)."
		}
		if got := textOf(res); res.IsError || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to say %q", tc.tool, got, want)
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

func TestPausedSandboxSaysHowToResumeIt(t *testing.T) {
	sb := &fakeSandbox{display: desktop.DefaultDisplay, paused: true}
	for _, name := range []string{"sandbox_click", "sandbox_screenshot", "sandbox_key"} {
		args := map[string]string{"sandbox_click": `{"x":1,"y":1}`, "sandbox_key": `{"keys":"Return"}`}[name]
		res := call(t, sb, name, args)
		if !res.IsError || !strings.Contains(textOf(res), "The sandbox is paused") || !strings.Contains(textOf(res), "Resume it with sandbox_start") {
			t.Errorf("%s on a paused sandbox: %q", name, textOf(res))
		}
	}
}

func TestLargeDisplaysAreScaled(t *testing.T) {
	sb := &fakeSandbox{display: desktop.Display{Width: 2560, Height: 1600}}
	res := call(t, sb, "sandbox_screenshot", `{}`)
	if res.IsError || len(res.Content) != 2 || res.Content[0].Type != "image" || res.Content[0].MimeType != "image/png" {
		t.Fatalf("screenshot: %+v", res)
	}
	data := res.Content[0].Data
	img, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil || img.Width != 1389 || img.Height != 868 {
		t.Errorf("scaled screenshot is %dx%d (%v), want 1389x868", img.Width, img.Height, err)
	}
	if note := textOf(res); !strings.Contains(note, "1389x868 pixels, scaled down from the 2560x1600 display") {
		t.Errorf("note = %q", note)
	}
	sb.calls = nil
	call(t, sb, "sandbox_click", `{"x": 1388, "y": 867}`)
	call(t, sb, "sandbox_click", `{"x": 694, "y": 434}`)
	if got := strings.Join(sb.calls, "|"); got != "click [2559,1599,1,1]|click [1280,800,1,1]" {
		t.Errorf("clicks mapped to %s", got)
	}
	if res := call(t, sb, "sandbox_click", `{"x": 1389, "y": 0}`); !strings.Contains(textOf(res), "from 0 to 1388 (the screenshot is 1389x868 pixels)") {
		t.Errorf("off the scaled screen: %q", textOf(res))
	}
}

func TestDefaultDisplayIsSentAtFullSize(t *testing.T) {
	sb := &fakeSandbox{display: desktop.DefaultDisplay}
	res := call(t, sb, "sandbox_screenshot", ``)
	data := res.Content[0].Data
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
