package desktop

import (
	"context"
	"fmt"
	"image"
	"time"
)

// Desktop drives a running sandbox's display through its desktop agent:
// pointer, keyboard, screen and clipboard. Coordinates are display pixels.
type Desktop struct {
	conn    Conn
	display Display
}

// Conn gives a Desktop the agent of the sandbox's current run, and says
// what a failed request means for the sandbox (most often: it stopped).
type Conn interface {
	Agent(ctx context.Context) (*Agent, error)
	Explain(ctx context.Context, err error) error
}

// New returns the desktop of a display reached through conn.
func New(conn Conn, display Display) *Desktop { return &Desktop{conn: conn, display: display} }

// Display is the display's size.
func (d *Desktop) Display() Display { return d.display }

// requestTimeout bounds a request that is not typing.
const requestTimeout = 20 * time.Second

func (d *Desktop) call(ctx context.Context, req request, timeout time.Duration) (response, error) {
	a, err := d.conn.Agent(ctx)
	if err != nil {
		return response{}, d.conn.Explain(ctx, err)
	}
	resp, err := a.call(ctx, req, timeout)
	if err != nil {
		return resp, d.conn.Explain(ctx, err)
	}
	return resp, nil
}

// Move moves the pointer.
func (d *Desktop) Move(ctx context.Context, x, y int) error {
	_, err := d.call(ctx, request{Op: "move", X: x, Y: y}, requestTimeout)
	return err
}

// Pointer says where the pointer is.
func (d *Desktop) Pointer(ctx context.Context) (image.Point, error) {
	resp, err := d.call(ctx, request{Op: "pointer"}, requestTimeout)
	return image.Pt(resp.X, resp.Y), err
}

// Click moves the pointer and clicks a button (1 left, 2 middle, 3 right)
// count times, holding the modifiers (ctrl, shift, alt, super) down.
func (d *Desktop) Click(ctx context.Context, x, y, button, count int, modifiers ...string) error {
	req := request{Op: "click", X: x, Y: y, Button: button, Count: count, Modifiers: modifiers}
	_, err := d.call(ctx, req, requestTimeout)
	return err
}

// Drag is a drag with the left button.
type Drag struct {
	// Path is where the pointer goes: pressed at the first point, through
	// the others in order, released at the last. It has at least two.
	Path []image.Point
	// Duration is how long the move takes; 0 moves in quick steps.
	Duration time.Duration
	// Modifiers are keys held down all along (ctrl, shift, alt, super).
	Modifiers []string
}

// Drag presses the left button at the path's first point, moves along it
// and releases at its end.
func (d *Desktop) Drag(ctx context.Context, g Drag) error {
	if len(g.Path) < 2 {
		return fmt.Errorf("a drag needs at least two points, not %d", len(g.Path))
	}
	first, last := g.Path[0], g.Path[len(g.Path)-1]
	req := request{Op: "drag", X: first.X, Y: first.Y, ToX: last.X, ToY: last.Y,
		DurationMs: g.Duration.Milliseconds(), Modifiers: g.Modifiers}
	for _, p := range g.Path[1 : len(g.Path)-1] {
		req.Path = append(req.Path, [2]int{p.X, p.Y})
	}
	_, err := d.call(ctx, req, requestTimeout+g.Duration)
	return err
}

// Scroll turns the wheel amount clicks (up, down, left or right) at a
// point, holding the modifiers down.
func (d *Desktop) Scroll(ctx context.Context, x, y int, direction string, amount int, modifiers ...string) error {
	req := request{Op: "scroll", X: x, Y: y, Direction: direction, Amount: amount, Modifiers: modifiers}
	_, err := d.call(ctx, req, requestTimeout)
	return err
}

// Type types text into the focused window, any Unicode, exactly and in order.
func (d *Desktop) Type(ctx context.Context, text string) error {
	_, err := d.call(ctx, request{Op: "type", Text: text}, typeTimeout(text))
	return err
}

// TypeInto types text into the element of ref, which Focus gave the
// keyboard focus: an element of a page through its browser, whose page
// gets every key even while Chromium's window is still becoming active
// (it drops keys from the X server then), any other as Type does.
func (d *Desktop) TypeInto(ctx context.Context, ref, text string) error {
	_, err := d.call(ctx, request{Op: "type", Text: text, Ref: ref}, typeTimeout(text))
	return err
}

// typeTimeout bounds typing text. Typing runs at thousands of characters
// a second, slower only when it must wait to re-bind spare keycodes for
// many distinct characters.
func typeTimeout(text string) time.Duration {
	return requestTimeout + time.Duration(len([]rune(text)))*5*time.Millisecond
}

// Keys presses key combinations in xdotool's syntax ("ctrl+c", "Return",
// "ctrl+a BackSpace").
func (d *Desktop) Keys(ctx context.Context, keys string) error {
	_, err := d.call(ctx, request{Op: "key", Keys: keys}, requestTimeout)
	return err
}

// HoldKeys holds one key combination ("shift", "ctrl+a") down for a while
// before releasing it; held long enough, the key repeats.
func (d *Desktop) HoldKeys(ctx context.Context, combo string, hold time.Duration) error {
	_, err := d.call(ctx, request{Op: "key", Keys: combo, HoldMs: hold.Milliseconds()}, requestTimeout+hold)
	return err
}

// screenshotAnswerBound is the longest a screenshot of the display can be
// (its frame; the JSON line after it is a few numbers): its pixels stored
// uncompressed at 4 bytes each (the agent sends 3) with a filter byte a
// row, and deflate's and PNG's framing (well under one part in 64).
func screenshotAnswerBound(d Display) int {
	raw := d.Height * (1 + 4*d.Width)
	return raw + raw/64 + 8<<10
}

// Clipboard returns the clipboard's text; empty reports that nothing is
// on the clipboard.
func (d *Desktop) Clipboard(ctx context.Context) (text string, empty bool, err error) {
	resp, err := d.call(ctx, request{Op: "clipboard_get", maxAnswer: maxClipboardAnswer}, requestTimeout)
	return resp.Text, resp.Empty, err
}

// SetClipboard puts text on the clipboard.
func (d *Desktop) SetClipboard(ctx context.Context, text string) error {
	_, err := d.call(ctx, request{Op: "clipboard_set", Text: text}, requestTimeout)
	return err
}
