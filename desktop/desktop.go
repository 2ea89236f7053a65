package desktop

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image/png"
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

// Click moves the pointer and clicks a button (1 left, 2 middle, 3 right)
// count times.
func (d *Desktop) Click(ctx context.Context, x, y, button, count int) error {
	_, err := d.call(ctx, request{Op: "click", X: x, Y: y, Button: button, Count: count}, requestTimeout)
	return err
}

// Drag presses the left button at one point, moves to another and releases.
func (d *Desktop) Drag(ctx context.Context, x, y, toX, toY int) error {
	_, err := d.call(ctx, request{Op: "drag", X: x, Y: y, ToX: toX, ToY: toY}, requestTimeout)
	return err
}

// Scroll turns the wheel amount clicks (up, down, left or right) at a point.
func (d *Desktop) Scroll(ctx context.Context, x, y int, direction string, amount int) error {
	_, err := d.call(ctx, request{Op: "scroll", X: x, Y: y, Direction: direction, Amount: amount}, requestTimeout)
	return err
}

// Type types text into the focused window, any Unicode, exactly and in order.
func (d *Desktop) Type(ctx context.Context, text string) error {
	// Typing runs at thousands of characters a second, slower only when it
	// must wait to re-bind spare keycodes for many distinct characters.
	timeout := requestTimeout + time.Duration(len([]rune(text)))*5*time.Millisecond
	_, err := d.call(ctx, request{Op: "type", Text: text}, timeout)
	return err
}

// Keys presses key combinations in xdotool's syntax ("ctrl+c", "Return",
// "ctrl+a BackSpace").
func (d *Desktop) Keys(ctx context.Context, keys string) error {
	_, err := d.call(ctx, request{Op: "key", Keys: keys}, requestTimeout)
	return err
}

// Screenshot is a PNG of the whole display.
type Screenshot struct {
	PNG    []byte
	Width  int
	Height int
}

// Screenshot captures the whole display as a PNG. The PNG's header must
// give the display's size: a PNG is only ever decoded by its size, and one
// the sandbox forged may claim any.
func (d *Desktop) Screenshot(ctx context.Context) (Screenshot, error) {
	resp, err := d.call(ctx, request{Op: "screenshot", maxAnswer: screenshotAnswerBound(d.display)}, requestTimeout)
	if err != nil {
		return Screenshot{}, err
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(resp.PNG))
	if err != nil {
		return Screenshot{}, fmt.Errorf("%w: %v", ErrBadScreenshot, err)
	}
	if cfg.Width != d.display.Width || cfg.Height != d.display.Height {
		return Screenshot{}, fmt.Errorf("%w: it is %dx%d, the display %dx%d",
			ErrBadScreenshot, cfg.Width, cfg.Height, d.display.Width, d.display.Height)
	}
	return Screenshot{PNG: resp.PNG, Width: cfg.Width, Height: cfg.Height}, nil
}

// screenshotAnswerBound is the longest answer a screenshot of the display
// can be: its pixels stored uncompressed at 4 bytes each (the agent sends
// 3) with a filter byte a row, deflate's and PNG's framing (well under one
// part in 64), in base64, and the JSON around it.
func screenshotAnswerBound(d Display) int {
	raw := d.Height * (1 + 4*d.Width)
	pngMax := raw + raw/64 + 4<<10
	return base64.StdEncoding.EncodedLen(pngMax) + 4<<10
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
