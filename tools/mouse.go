package tools

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Bounds of sandbox_scroll's amount, in wheel clicks.
const (
	maxScrollAmount     = 100
	defaultScrollAmount = 3
)

// point is a point of the latest screenshot, where a mouse action happens.
type point struct {
	X int `json:"x" jsonschema:"Horizontal position, in pixels of the latest screenshot; 0 is the left edge."`
	Y int `json:"y" jsonschema:"Vertical position, in pixels of the latest screenshot; 0 is the top edge."`
}

// TuneSchema: no pixel is left of or above the screen. The other edges
// depend on the display, and are checked against the screenshot's size.
func (point) TuneSchema(s *jsonschema.Schema) { atLeastZero(s, "x", "y") }

func atLeastZero(s *jsonschema.Schema, names ...string) {
	for _, name := range names {
		s.Properties[name].Minimum = jsonschema.Ptr(0.0)
	}
}

// bound sets a number argument's inclusive bounds, and states them in its
// description too, for the hosts that show a model descriptions but drop
// the keywords.
func bound(p *jsonschema.Schema, min, max float64) {
	p.Minimum, p.Maximum = &min, &max
	p.Description = fmt.Sprintf("%s, %s to %s.", strings.TrimSuffix(p.Description, "."),
		strconv.FormatFloat(min, 'f', -1, 64), strconv.FormatFloat(max, 'f', -1, 64))
}

// onScreen runs f with the project's desktop and a point checked against,
// and mapped from, the screenshot's size.
func onScreen(ctx context.Context, sb Sandbox, project string, p point, f func(d Desktop, x, y int) error) error {
	d, err := sb.Desktop(ctx, project)
	if err != nil {
		return err
	}
	x, y, err := scaleFor(d.Display()).point("x", p.X, "y", p.Y)
	if err != nil {
		return err
	}
	return f(d, x, y)
}

func clickTool(sb Sandbox, name, action string, button, count int) tool {
	desc := action + " at a point of the sandbox's screen. x and y are pixels of the latest screenshot " +
		"(take one with sandbox_screenshot first). Returns a confirmation; take a screenshot to see the effect."
	return define(name, desc, func(ctx context.Context, project string, p point) (Result, error) {
		err := onScreen(ctx, sb, project, p, func(d Desktop, x, y int) error { return d.Click(ctx, x, y, button, count) })
		return Text(fmt.Sprintf("%s at (%d, %d).", pastTense(action), p.X, p.Y)), err
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
	return define("sandbox_hover", desc, func(ctx context.Context, project string, p point) (Result, error) {
		err := onScreen(ctx, sb, project, p, func(d Desktop, x, y int) error { return d.Move(ctx, x, y) })
		return Text(fmt.Sprintf("Moved the pointer to (%d, %d).", p.X, p.Y)), err
	})
}

type dragArgs struct {
	StartX int `json:"startX" jsonschema:"Where the drag starts, horizontally, in screenshot pixels."`
	StartY int `json:"startY" jsonschema:"Where the drag starts, vertically, in screenshot pixels."`
	EndX   int `json:"endX" jsonschema:"Where the drag ends, horizontally, in screenshot pixels."`
	EndY   int `json:"endY" jsonschema:"Where the drag ends, vertically, in screenshot pixels."`
}

func (dragArgs) TuneSchema(s *jsonschema.Schema) { atLeastZero(s, "startX", "startY", "endX", "endY") }

func dragTool(sb Sandbox) tool {
	desc := "Drag with the left mouse button: press at (startX, startY), move to (endX, endY) holding the " +
		"button, release there. Coordinates are pixels of the latest screenshot. Use it to move windows, " +
		"select text or drag and drop."
	return define("sandbox_drag", desc, func(ctx context.Context, project string, a dragArgs) (Result, error) {
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
		s := scaleFor(d.Display())
		x0, y0, err := s.point("startX", a.StartX, "startY", a.StartY)
		if err != nil {
			return Result{}, err
		}
		x1, y1, err := s.point("endX", a.EndX, "endY", a.EndY)
		if err != nil {
			return Result{}, err
		}
		if err := d.Drag(ctx, x0, y0, x1, y1); err != nil {
			return Result{}, err
		}
		return Text(fmt.Sprintf("Dragged from (%d, %d) to (%d, %d).", a.StartX, a.StartY, a.EndX, a.EndY)), nil
	})
}

type scrollArgs struct {
	point
	Direction string `json:"direction" jsonschema:"Which way to scroll: up, down, left or right."`
	Amount    int    `json:"amount,omitzero" jsonschema:"How many wheel clicks."`
}

func (scrollArgs) TuneSchema(s *jsonschema.Schema) {
	point{}.TuneSchema(s)
	s.Properties["direction"].Enum = []any{"up", "down", "left", "right"}
	bound(s.Properties["amount"], 1, maxScrollAmount)
	s.Properties["amount"].Default = jsonInt(defaultScrollAmount)
}

func scrollTool(sb Sandbox) tool {
	desc := fmt.Sprintf("Turn the mouse wheel over a point of the screen (pixels of the latest screenshot): direction up, "+
		"down, left or right, amount wheel clicks (1 to %d, default %d; one click scrolls about three lines).",
		maxScrollAmount, defaultScrollAmount)
	return define("sandbox_scroll", desc, func(ctx context.Context, project string, a scrollArgs) (Result, error) {
		err := onScreen(ctx, sb, project, a.point, func(d Desktop, x, y int) error {
			return d.Scroll(ctx, x, y, a.Direction, a.Amount)
		})
		return Text(fmt.Sprintf("Scrolled %s %d clicks at (%d, %d).", a.Direction, a.Amount, a.X, a.Y)), err
	})
}
