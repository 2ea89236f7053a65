package tools

import (
	"context"
	"fmt"
	"image"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

type dragArgs struct {
	StartX     int     `json:"startX" jsonschema:"Where the drag starts, horizontally, in screenshot pixels."`
	StartY     int     `json:"startY" jsonschema:"Where the drag starts, vertically, in screenshot pixels."`
	EndX       int     `json:"endX" jsonschema:"Where the drag ends, horizontally, in screenshot pixels."`
	EndY       int     `json:"endY" jsonschema:"Where the drag ends, vertically, in screenshot pixels."`
	Path       [][]int `json:"path,omitempty" jsonschema:"Points to pass through on the way, in order: [[x, y], ...] in screenshot pixels (to draw, or to follow a menu)."`
	DurationMs int     `json:"durationMs,omitzero" jsonschema:"How long the move takes, in milliseconds, for what follows the pointer's speed (quick steps when left out)."`
	held
}

// Bounds of sandbox_drag's path and duration.
const (
	maxDragPoints     = 100
	maxDragDurationMs = 10000
)

func (dragArgs) TuneSchema(s *jsonschema.Schema) {
	atLeastZero(s, "startX", "startY", "endX", "endY")
	p := s.Properties["path"]
	p.MaxItems = jsonschema.Ptr(maxDragPoints)
	p.Items.MinItems, p.Items.MaxItems = jsonschema.Ptr(2), jsonschema.Ptr(2)
	p.Items.Items.Minimum = jsonschema.Ptr(0.0)
	bound(s.Properties["durationMs"], 1, maxDragDurationMs)
	held{}.tune(s)
}

func dragTool(sb Sandbox) tool {
	desc := "Drag with the left mouse button: press at (startX, startY), move to (endX, endY) holding the button, " +
		"release there; coordinates are pixels of the latest screenshot. Moves windows, selects text, drags and drops. " +
		"path adds points to pass through, durationMs slows the move, modifiers holds keys down (shift extends a selection)."
	return define("sandbox_drag", desc, acts, func(ctx context.Context, project string, a dragArgs) (Result, error) {
		return act(ctx, sb, project, func(d Desktop, s scale) (string, error) {
			path, err := a.displayPath(s)
			if err != nil {
				return "", err
			}
			g := desktop.Drag{Path: path, Duration: time.Duration(a.DurationMs) * time.Millisecond, Modifiers: a.keys()}
			if err := d.Drag(ctx, g); err != nil {
				return "", err
			}
			return fmt.Sprintf("Dragged from (%d, %d) to (%d, %d)%s%s.", a.StartX, a.StartY, a.EndX, a.EndY, a.through(), a.holding()), nil
		})
	})
}

// displayPath is the drag's points, checked and mapped to the display.
func (a dragArgs) displayPath(s scale) ([]image.Point, error) {
	start, err := s.point("startX", a.StartX, "startY", a.StartY)
	if err != nil {
		return nil, err
	}
	path := []image.Point{start}
	for i, p := range a.Path {
		name := fmt.Sprintf("path[%d]", i)
		at, err := s.point(name+"[0]", p[0], name+"[1]", p[1])
		if err != nil {
			return nil, err
		}
		path = append(path, at)
	}
	end, err := s.point("endX", a.EndX, "endY", a.EndY)
	return append(path, end), err
}

// through says what the drag went through and how long it took.
func (a dragArgs) through() string {
	out := ""
	if n := len(a.Path); n > 0 {
		out = fmt.Sprintf(" through %d points", n)
	}
	if a.DurationMs > 0 {
		out += fmt.Sprintf(" over %d ms", a.DurationMs)
	}
	return out
}
