package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"time"
)

// Desktop drives a running sandbox's display through its desktop agent:
// pointer, keyboard, screen and clipboard. Coordinates are display pixels.
// A Desktop is cheap; get one per use with Manager.Desktop.
type Desktop struct {
	m           *Manager
	b           *box
	containerID string
	display     Display
}

// Desktop returns the display of the project's running sandbox.
func (m *Manager) Desktop(ctx context.Context, path string) (*Desktop, error) {
	b, st, err := m.running(ctx, path)
	if err != nil {
		return nil, err
	}
	return &Desktop{m: m, b: b, containerID: st.ContainerID, display: st.Display}, nil
}

// Display is the display's size.
func (d *Desktop) Display() Display { return d.display }

// requestTimeout bounds a request that is not typing.
const requestTimeout = 20 * time.Second

func (d *Desktop) call(ctx context.Context, req agentRequest, timeout time.Duration) (agentResponse, error) {
	a, err := d.m.agentFor(ctx, d.b, d.containerID)
	if err != nil {
		return agentResponse{}, d.explain(ctx, err)
	}
	resp, err := a.call(ctx, req, timeout)
	if err != nil {
		return resp, d.explain(ctx, err)
	}
	return resp, nil
}

// explain turns an agent that went away into what happened to the sandbox:
// most often it was stopped.
func (d *Desktop) explain(ctx context.Context, err error) error {
	if !errors.Is(err, errAgentGone) && !errors.Is(err, ErrNotRunning) && !errors.Is(err, ErrContainerNotFound) {
		return err
	}
	d.m.settle(ctx, d.b)
	if st := d.b.snapshot(); st == nil || st.Status != StatusRunning {
		return fmt.Errorf("%w: it stopped", ErrNotRunning)
	}
	return err
}

// Move moves the pointer.
func (d *Desktop) Move(ctx context.Context, x, y int) error {
	_, err := d.call(ctx, agentRequest{Op: "move", X: x, Y: y}, requestTimeout)
	return err
}

// Click moves the pointer and clicks a button (1 left, 2 middle, 3 right)
// count times.
func (d *Desktop) Click(ctx context.Context, x, y, button, count int) error {
	_, err := d.call(ctx, agentRequest{Op: "click", X: x, Y: y, Button: button, Count: count}, requestTimeout)
	return err
}

// Drag presses the left button at one point, moves to another and releases.
func (d *Desktop) Drag(ctx context.Context, x, y, toX, toY int) error {
	_, err := d.call(ctx, agentRequest{Op: "drag", X: x, Y: y, ToX: toX, ToY: toY}, requestTimeout)
	return err
}

// Scroll turns the wheel amount clicks (up, down, left or right) at a point.
func (d *Desktop) Scroll(ctx context.Context, x, y int, direction string, amount int) error {
	_, err := d.call(ctx, agentRequest{Op: "scroll", X: x, Y: y, Direction: direction, Amount: amount}, requestTimeout)
	return err
}

// Type types text into the focused window, any Unicode, exactly and in order.
func (d *Desktop) Type(ctx context.Context, text string) error {
	// Typing runs at thousands of characters a second, slower only when it
	// must wait to re-bind spare keycodes for many distinct characters.
	timeout := requestTimeout + time.Duration(len([]rune(text)))*5*time.Millisecond
	_, err := d.call(ctx, agentRequest{Op: "type", Text: text}, timeout)
	return err
}

// Keys presses key combinations in xdotool's syntax ("ctrl+c", "Return",
// "ctrl+a BackSpace").
func (d *Desktop) Keys(ctx context.Context, keys string) error {
	_, err := d.call(ctx, agentRequest{Op: "key", Keys: keys}, requestTimeout)
	return err
}

// Screenshot captures the whole display as a PNG.
func (d *Desktop) Screenshot(ctx context.Context) (Screenshot, error) {
	resp, err := d.call(ctx, agentRequest{Op: "screenshot"}, requestTimeout)
	if err != nil {
		return Screenshot{}, err
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(resp.PNG))
	if err != nil {
		return Screenshot{}, fmt.Errorf("screenshot: %w", err)
	}
	return Screenshot{PNG: resp.PNG, Width: cfg.Width, Height: cfg.Height}, nil
}

// Clipboard returns the clipboard's text; empty reports that nothing is
// on the clipboard.
func (d *Desktop) Clipboard(ctx context.Context) (text string, empty bool, err error) {
	resp, err := d.call(ctx, agentRequest{Op: "clipboard_get"}, requestTimeout)
	return resp.Text, resp.Empty, err
}

// SetClipboard puts text on the clipboard.
func (d *Desktop) SetClipboard(ctx context.Context, text string) error {
	_, err := d.call(ctx, agentRequest{Op: "clipboard_set", Text: text}, requestTimeout)
	return err
}
