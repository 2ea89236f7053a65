package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Sandbox is what the tools need of the sidecar; *service.Manager is one
// (through New).
type Sandbox interface {
	Start(ctx context.Context, project string) (service.State, error)
	Stop(ctx context.Context, project string) (service.State, error)
	Exec(ctx context.Context, project string, req service.ExecRequest) (service.ExecOutput, error)
	Desktop(ctx context.Context, project string) (Desktop, error)
}

// Desktop drives a running sandbox's display; *service.Desktop is one.
type Desktop interface {
	Display() desktop.Display
	Move(ctx context.Context, x, y int) error
	Click(ctx context.Context, x, y, button, count int) error
	Drag(ctx context.Context, x, y, toX, toY int) error
	Scroll(ctx context.Context, x, y int, direction string, amount int) error
	Type(ctx context.Context, text string) error
	Keys(ctx context.Context, keys string) error
	Screenshot(ctx context.Context) (desktop.Screenshot, error)
	Clipboard(ctx context.Context) (string, bool, error)
	SetClipboard(ctx context.Context, text string) error
}

// Limits of the tools' arguments.
const (
	MaxTextLength = 100000
	MaxWait       = 30
)

// New returns the agent tools, run on the manager's sandboxes.
func New(m *service.Manager) *Set { return newSet(definitions(managerSandbox{m})) }

// managerSandbox adapts the manager to Sandbox.
type managerSandbox struct{ *service.Manager }

func (s managerSandbox) Desktop(ctx context.Context, project string) (Desktop, error) {
	return s.Manager.Desktop(ctx, project)
}

// define is a tool from its parameters and a function of the checked
// arguments; argument errors and sandbox failures become error results.
func define(name, desc string, params []param, run func(ctx context.Context, project string, a args) (Result, error)) tool {
	return tool{
		info: Tool{Name: name, Description: desc, InputSchema: schema(params)},
		call: func(ctx context.Context, project string, raw json.RawMessage) Result {
			a, err := parseArgs(params, raw)
			if err == nil {
				var res Result
				if res, err = run(ctx, project, a); err == nil {
					return res
				}
			}
			return failure(err)
		},
	}
}

// failure tells the model what went wrong and what to do about it.
func failure(err error) Result {
	var ae *argError
	switch {
	case errors.As(err, &ae):
		return Errorf("Invalid arguments: " + ae.Error() + ".")
	case errors.Is(err, service.ErrNotRunning):
		return Errorf("The sandbox is not running. Start it with sandbox_start, then take a screenshot.")
	case errors.Is(err, service.ErrDockerUnavailable):
		return Errorf("Docker is not available, so the sandbox cannot run. Tell the user: " + err.Error())
	case errors.Is(err, service.ErrAgent):
		return Errorf(strings.TrimPrefix(err.Error(), service.ErrAgent.Error()+": ") + ".")
	case errors.Is(err, context.Canceled):
		return Errorf("The call was cancelled.")
	default:
		return Errorf("The tool failed: " + err.Error())
	}
}

// pointParams are the x and y of a point in the latest screenshot.
func pointParams(what string) []param {
	return []param{
		integer("x", "Horizontal position "+what+", in pixels of the latest screenshot; 0 is the left edge.", 0, math.NaN()),
		integer("y", "Vertical position "+what+", in pixels of the latest screenshot; 0 is the top edge.", 0, math.NaN()),
	}
}

func definitions(sb Sandbox) []tool {
	return []tool{
		clickTool(sb, "sandbox_click", "Left-click", 1, 1),
		clickTool(sb, "sandbox_double_click", "Double-click (left button)", 1, 2),
		clickTool(sb, "sandbox_right_click", "Right-click", 3, 1),
		clickTool(sb, "sandbox_middle_click", "Middle-click", 2, 1),
		hoverTool(sb),
		dragTool(sb),
		scrollTool(sb),
		typeTool(sb),
		keyTool(sb),
		screenshotTool(sb),
		clipboardGetTool(sb),
		clipboardSetTool(sb),
		startTool(sb),
		stopTool(sb),
		waitTool(),
		execTool(sb),
	}
}

// onScreen runs f with the project's desktop and a point checked against,
// and mapped from, the screenshot's size.
func onScreen(ctx context.Context, sb Sandbox, project string, a args, f func(d Desktop, x, y int) error) error {
	d, err := sb.Desktop(ctx, project)
	if err != nil {
		return err
	}
	x, y, err := scaleFor(d.Display()).point("x", a.int("x"), "y", a.int("y"))
	if err != nil {
		return err
	}
	return f(d, x, y)
}

func clickTool(sb Sandbox, name, action string, button, count int) tool {
	desc := action + " at a point of the sandbox's screen. x and y are pixels of the latest screenshot " +
		"(take one with sandbox_screenshot first). Returns a confirmation; take a screenshot to see the effect."
	return define(name, desc, pointParams("to click"), func(ctx context.Context, project string, a args) (Result, error) {
		err := onScreen(ctx, sb, project, a, func(d Desktop, x, y int) error { return d.Click(ctx, x, y, button, count) })
		return Text(fmt.Sprintf("%s at (%d, %d).", pastTense(action), a.int("x"), a.int("y"))), err
	})
}

func pastTense(action string) string {
	switch {
	case strings.HasPrefix(action, "Double-click"):
		return "Double-clicked"
	default:
		return strings.Replace(action, "click", "clicked", 1)
	}
}

func hoverTool(sb Sandbox) tool {
	desc := "Move the mouse pointer to a point without clicking (to show a tooltip or open a hover menu). " +
		"x and y are pixels of the latest screenshot."
	return define("sandbox_hover", desc, pointParams("to move to"), func(ctx context.Context, project string, a args) (Result, error) {
		err := onScreen(ctx, sb, project, a, func(d Desktop, x, y int) error { return d.Move(ctx, x, y) })
		return Text(fmt.Sprintf("Moved the pointer to (%d, %d).", a.int("x"), a.int("y"))), err
	})
}

func dragTool(sb Sandbox) tool {
	desc := "Drag with the left mouse button: press at (startX, startY), move to (endX, endY) holding the " +
		"button, release there. Coordinates are pixels of the latest screenshot. Use it to move windows, " +
		"select text or drag and drop."
	params := []param{
		integer("startX", "Where the drag starts, horizontally, in screenshot pixels.", 0, math.NaN()),
		integer("startY", "Where the drag starts, vertically, in screenshot pixels.", 0, math.NaN()),
		integer("endX", "Where the drag ends, horizontally, in screenshot pixels.", 0, math.NaN()),
		integer("endY", "Where the drag ends, vertically, in screenshot pixels.", 0, math.NaN()),
	}
	return define("sandbox_drag", desc, params, func(ctx context.Context, project string, a args) (Result, error) {
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
		s := scaleFor(d.Display())
		x0, y0, err := s.point("startX", a.int("startX"), "startY", a.int("startY"))
		if err != nil {
			return Result{}, err
		}
		x1, y1, err := s.point("endX", a.int("endX"), "endY", a.int("endY"))
		if err != nil {
			return Result{}, err
		}
		if err := d.Drag(ctx, x0, y0, x1, y1); err != nil {
			return Result{}, err
		}
		return Text(fmt.Sprintf("Dragged from (%d, %d) to (%d, %d).", a.int("startX"), a.int("startY"), a.int("endX"), a.int("endY"))), nil
	})
}

func scrollTool(sb Sandbox) tool {
	desc := "Turn the mouse wheel over a point of the screen (pixels of the latest screenshot): direction up, " +
		"down, left or right, amount wheel clicks (1 to 100, default 3; one click scrolls about three lines)."
	params := append(pointParams("to scroll at"),
		param{name: "direction", kind: kindString, desc: "Which way to scroll: up, down, left or right.",
			required: true, min: math.NaN(), max: math.NaN(), enum: []string{"up", "down", "left", "right"}},
		integer("amount", "How many wheel clicks, 1 to 100.", 1, 100).optional(3),
	)
	return define("sandbox_scroll", desc, params, func(ctx context.Context, project string, a args) (Result, error) {
		err := onScreen(ctx, sb, project, a, func(d Desktop, x, y int) error {
			return d.Scroll(ctx, x, y, a.string("direction"), a.int("amount"))
		})
		return Text(fmt.Sprintf("Scrolled %s %d clicks at (%d, %d).", a.string("direction"), a.int("amount"), a.int("x"), a.int("y"))), err
	})
}

func typeTool(sb Sandbox) tool {
	desc := "Type text into the sandbox's focused window, exactly as given: any Unicode, a newline presses " +
		"Enter, a tab presses Tab. Click the field first to focus it. 1 to 100000 characters. For shortcuts " +
		"and special keys (ctrl+c, Escape, arrows) use sandbox_key."
	params := []param{text("text", "The text to type.", 1, MaxTextLength)}
	return define("sandbox_type", desc, params, func(ctx context.Context, project string, a args) (Result, error) {
		t := a.string("text")
		if err := checkTypeable(t); err != nil {
			return Result{}, err
		}
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
		if err := d.Type(ctx, t); err != nil {
			return Result{}, err
		}
		return Text(fmt.Sprintf("Typed %d characters.", len([]rune(t)))), nil
	})
}

// checkTypeable refuses control characters that are not keys of a keyboard.
func checkTypeable(t string) error {
	for i, r := range []rune(t) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return &argError{name: "text", msg: fmt.Sprintf("has the control character U+%04X at position %d; for special keys use sandbox_key", r, i)}
		}
	}
	return nil
}

func keyTool(sb Sandbox) tool {
	desc := "Press keys or key combinations in the sandbox, in order, as xdotool's key command names them: " +
		"Return, Escape, BackSpace, Tab, Delete, Up, Down, Left, Right, Home, End, Page_Up, F1..F12, space, " +
		"a, A, 1, combinations joined with + (ctrl+c, ctrl+shift+t, alt+F4, super), several separated by " +
		"spaces (\"ctrl+a BackSpace\"). Modifiers: ctrl, shift, alt, super. To type text use sandbox_type."
	params := []param{text("keys", "The keys to press, e.g. \"ctrl+s\" or \"Down Down Return\".", 1, 1000)}
	return define("sandbox_key", desc, params, func(ctx context.Context, project string, a args) (Result, error) {
		keys := a.string("keys")
		if err := checkKeys(keys); err != nil {
			return Result{}, err
		}
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
		if err := d.Keys(ctx, keys); err != nil {
			if errors.Is(err, service.ErrAgent) {
				return Result{}, &argError{name: "keys", msg: strings.TrimPrefix(err.Error(), service.ErrAgent.Error()+": ") +
					"; use X key names such as Return, Escape, BackSpace, Tab, Up, F5, ctrl+c"}
			}
			return Result{}, err
		}
		return Text("Pressed " + strings.Join(strings.Fields(keys), ", ") + "."), nil
	})
}

// checkKeys accepts xdotool key syntax only: names of letters, digits and
// underscores (or one printable character), joined by +, separated by spaces.
func checkKeys(keys string) error {
	combos := strings.Fields(keys)
	if len(combos) == 0 {
		return &argError{name: "keys", msg: "must name at least one key"}
	}
	if len(combos) > 100 {
		return &argError{name: "keys", msg: "may press at most 100 combinations at once"}
	}
	for _, combo := range combos {
		for _, part := range strings.Split(combo, "+") {
			if !keyName(part) {
				return &argError{name: "keys", msg: fmt.Sprintf("has %q, which is not a key name: write combinations like ctrl+c, "+
					"names like Return or Page_Up, and separate combinations with spaces", combo)}
			}
		}
	}
	return nil
}

func keyName(s string) bool {
	if len([]rune(s)) == 1 {
		r := []rune(s)[0]
		return unicode.IsPrint(r) && !unicode.IsSpace(r)
	}
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

func screenshotTool(sb Sandbox) tool {
	desc := "Take a screenshot of the sandbox's whole screen. Returns a PNG image and its size in pixels; " +
		"x and y in the other tools are pixels of this image. Take one after acting to see the effect."
	return define("sandbox_screenshot", desc, nil, func(ctx context.Context, project string, a args) (Result, error) {
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
		shot, err := d.Screenshot(ctx)
		if err != nil {
			return Result{}, err
		}
		s := scaleFor(desktop.Display{Width: shot.Width, Height: shot.Height})
		data, note := shot.PNG, fmt.Sprintf("Screenshot of the whole %dx%d screen; coordinates are pixels of this image.", shot.Width, shot.Height)
		if s.scaled() {
			if data, err = s.resize(shot.PNG); err != nil {
				return Result{}, err
			}
			note = fmt.Sprintf("Screenshot of the whole screen, %dx%d pixels, scaled down from the %dx%d display by %.4g. "+
				"Give coordinates in pixels of this image; they are scaled back to the display.",
				s.shot.Width, s.shot.Height, shot.Width, shot.Height, s.factor)
		}
		return Result{Content: []Content{
			{Type: "image", Data: base64.StdEncoding.EncodeToString(data), MimeType: "image/png"},
			{Type: "text", Text: note},
		}}, nil
	})
}

func clipboardGetTool(sb Sandbox) tool {
	desc := "Return the text on the sandbox's clipboard (what ctrl+c copied there)."
	return define("sandbox_clipboard_get", desc, nil, func(ctx context.Context, project string, a args) (Result, error) {
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
		text, empty, err := d.Clipboard(ctx)
		if err != nil {
			return Result{}, err
		}
		if empty {
			return Text("The clipboard is empty."), nil
		}
		return Text(text), nil
	})
}

func clipboardSetTool(sb Sandbox) tool {
	desc := "Put text on the sandbox's clipboard, to paste with ctrl+v (ctrl+shift+v in a terminal). " +
		"Up to 100000 characters."
	params := []param{text("text", "The text to put on the clipboard.", 0, MaxTextLength)}
	return define("sandbox_clipboard_set", desc, params, func(ctx context.Context, project string, a args) (Result, error) {
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
		if err := d.SetClipboard(ctx, a.string("text")); err != nil {
			return Result{}, err
		}
		return Text(fmt.Sprintf("Put %d characters on the clipboard.", len([]rune(a.string("text"))))), nil
	})
}

func startTool(sb Sandbox) tool {
	desc := "Start the project's sandbox, a Linux desktop in a container, if it is not running (the first " +
		"start can take a minute). Returns its state; then take a screenshot to see the screen."
	return define("sandbox_start", desc, nil, func(ctx context.Context, project string, a args) (Result, error) {
		st, err := sb.Start(ctx, project)
		if err != nil {
			return Result{}, err
		}
		return Text(fmt.Sprintf("The sandbox is running: a %dx%d Linux desktop (fluxbox, with xterm). "+
			"The user can watch it. Take a screenshot to see the screen.", st.Display.Width, st.Display.Height)), nil
	})
}

func stopTool(sb Sandbox) tool {
	desc := "Stop the project's sandbox. Its files and installed programs are kept for the next start."
	return define("sandbox_stop", desc, nil, func(ctx context.Context, project string, a args) (Result, error) {
		if _, err := sb.Stop(ctx, project); err != nil && !errors.Is(err, service.ErrNoSandbox) {
			return Result{}, err
		}
		return Text("The sandbox is stopped; its files are kept for the next start."), nil
	})
}

func waitTool() tool {
	desc := "Wait a number of seconds, 0 to 30, for something in the sandbox to happen (a page to load, a " +
		"program to start). Then take a screenshot to check."
	params := []param{{name: "seconds", kind: kindNumber, desc: "How long to wait, 0 to 30 seconds.", required: true, min: 0, max: MaxWait}}
	return define("sandbox_wait", desc, params, func(ctx context.Context, project string, a args) (Result, error) {
		d := time.Duration(a.float("seconds") * float64(time.Second))
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return Text(fmt.Sprintf("Waited %s seconds.", num(a.float("seconds")))), nil
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	})
}

func execTool(sb Sandbox) tool {
	desc := "Run a shell command in the sandbox (bash -lc, as its unprivileged user, with DISPLAY set so GUI " +
		"programs open on its screen). Returns the exit code, stdout and stderr (each cut at 10 MiB). To start a " +
		"GUI program that keeps running, redirect its output and background it: firefox >/dev/null 2>&1 & " +
		"timeoutSeconds: 1 to 600 (default 120); the command is killed when it runs out."
	params := []param{
		text("command", "The shell command.", 1, MaxTextLength),
		integer("timeoutSeconds", "Seconds before the command is killed, 1 to 600.", 1, 600).optional(120),
	}
	return define("sandbox_exec", desc, params, func(ctx context.Context, project string, a args) (Result, error) {
		out, err := sb.Exec(ctx, project, service.ExecRequest{
			Command: a.string("command"),
			Timeout: time.Duration(a.int("timeoutSeconds")) * time.Second,
		})
		if err != nil {
			return Result{}, err
		}
		return Text(execReport(out, a.int("timeoutSeconds"))), nil
	})
}

func execReport(out service.ExecOutput, timeout int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Exit code %d.", out.ExitCode)
	if out.TimedOut {
		fmt.Fprintf(&b, " The command was killed after %d seconds.", timeout)
	}
	if out.Truncated {
		b.WriteString(" Output was cut at 10 MiB.")
	}
	for _, s := range []struct{ name, text string }{{"stdout", out.Stdout}, {"stderr", out.Stderr}} {
		if s.text != "" {
			fmt.Fprintf(&b, "\n\n%s:\n%s", s.name, s.text)
		}
	}
	return b.String()
}
