package tools

import (
	"context"
	"errors"
	"fmt"
	"image"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Bounds of sandbox_scroll's amount, in wheel clicks.
const (
	maxScrollAmount     = 100
	defaultScrollAmount = 3
)

// modifierNames are the keys a mouse action can hold down.
var modifierNames = []any{"ctrl", "shift", "alt", "super"}

// point is a point of the latest screenshot, where a mouse action happens.
type point struct {
	X int `json:"x" jsonschema:"Horizontal position, in pixels of the latest screenshot; 0 is the left edge."`
	Y int `json:"y" jsonschema:"Vertical position, in pixels of the latest screenshot; 0 is the top edge."`
}

// TuneSchema: no pixel is left of or above the screen. The other edges
// depend on the display, and are checked against the screenshot's size.
func (point) TuneSchema(s *jsonschema.Schema) { atLeastZero(s, "x", "y") }

// held are the keys held down during a mouse action.
type held struct {
	Modifiers []string `json:"modifiers,omitempty" jsonschema:"Keys held down during the action, e.g. [\"ctrl\"] or [\"shift\"]: any of ctrl, shift, alt, super."`
}

func (held) tune(s *jsonschema.Schema) {
	m := s.Properties["modifiers"]
	m.Items.Enum = modifierNames
	m.MaxItems = jsonschema.Ptr(len(modifierNames))
}

// keys are the modifiers, each once.
func (h held) keys() []string {
	var out []string
	for _, m := range h.Modifiers {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// holding says what was held, after an action's description.
func (h held) holding() string {
	if len(h.Modifiers) == 0 {
		return ""
	}
	return " holding " + strings.Join(h.keys(), "+")
}

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

// act runs an action on the project's desktop, and answers what it did,
// where the pointer is now, in screenshot pixels, and whether the screen
// changed (settle.go): what a model needs to go on without a screenshot
// for every step. An action that did nothing (f says "") answers only
// where the pointer is.
func act(ctx context.Context, sb Sandbox, project string, f func(d Desktop, s scale) (string, error)) (Result, error) {
	d, err := sb.Desktop(ctx, project)
	if err != nil {
		return Result{}, err
	}
	s := scaleFor(d.Display())
	thumbnail(ctx, d, false)
	marked := d.Mark(ctx)
	done, err := f(d, s)
	if err != nil {
		return Result{}, err
	}
	text := strings.TrimSpace(done + " " + pointerAt(ctx, d, s))
	if done != "" {
		text += " " + settled(ctx, d, s, marked)
	}
	thumbnail(ctx, d, true)
	return Text(text), nil
}

func pointerAt(ctx context.Context, d Desktop, s scale) string {
	p, err := d.Pointer(ctx)
	if err != nil {
		return "Where the pointer is now could not be read (" + err.Error() + ")."
	}
	p = s.toShot(p)
	return fmt.Sprintf("The pointer is at (%d, %d).", p.X, p.Y)
}

// target is where a click goes: a point of the latest screenshot, or an
// element of its tree by ref.
type target struct {
	X   *int   `json:"x,omitempty" jsonschema:"Horizontal position, in pixels of the latest screenshot; 0 is the left edge."`
	Y   *int   `json:"y,omitempty" jsonschema:"Vertical position, in pixels of the latest screenshot; 0 is the top edge."`
	Ref string `json:"ref,omitempty" jsonschema:"Instead of x and y: an element's ref from the latest sandbox_screenshot with tree: true (e.g. e12), clicked in its middle."`
}

func (target) tune(s *jsonschema.Schema) { atLeastZero(s, "x", "y") }

// check says what is wrong with a click's target, before anything is
// asked of the sandbox: x and y, or ref.
func (t target) check() error {
	if t.Ref != "" {
		if t.X != nil || t.Y != nil {
			return argError("ref", "names an element to click instead of x and y: give ref, or x and y, not both")
		}
		return checkRef("ref", t.Ref)
	}
	if t.X == nil || t.Y == nil {
		missing := "x"
		if t.X != nil {
			missing = "y"
		}
		return argError(missing, "is required: give x and y (pixels of the latest screenshot), or ref (an element of its tree)")
	}
	return nil
}

// at is the display point a checked target's click goes to, and how the
// result names it: the point given, or the middle of the ref's element as
// it is now.
func (t target) at(ctx context.Context, d Desktop, s scale) (image.Point, string, error) {
	if t.Ref == "" {
		at, err := s.point("x", *t.X, "y", *t.Y)
		return at, fmt.Sprintf("at (%d, %d)", *t.X, *t.Y), err
	}
	el, err := d.Locate(ctx, t.Ref)
	if err != nil {
		return image.Point{}, "", refError(err)
	}
	at := image.Pt((el.Box.Min.X+el.Box.Max.X-1)/2, (el.Box.Min.Y+el.Box.Max.Y-1)/2)
	p := s.toShot(at)
	return at, fmt.Sprintf("%s (%s) at (%d, %d)", t.Ref, elementName(el), p.X, p.Y), nil
}

// elementName is an element as a result names it: role "name".
func elementName(el desktop.Element) string {
	if el.Name == "" {
		return el.Role
	}
	return el.Role + " " + quoted(el.Name)
}

// refError is a ref that names nothing on the screen now, as a model
// reads it: the agent's words say why (gone, hidden, scrolled away).
func refError(err error) error {
	if errors.Is(err, service.ErrAgent) {
		return argError("ref", strings.TrimPrefix(err.Error(), service.ErrAgent.Error()+": "))
	}
	return err
}

type clickArgs struct {
	target
	held
}

func (clickArgs) TuneSchema(s *jsonschema.Schema) { target{}.tune(s); held{}.tune(s) }

type leftClickArgs struct {
	target
	held
	Count int `json:"count,omitzero" jsonschema:"How many clicks (2 selects a word, 3 a line)."`
}

func (leftClickArgs) TuneSchema(s *jsonschema.Schema) {
	clickArgs{}.TuneSchema(s)
	bound(s.Properties["count"], 1, 3)
	s.Properties["count"].Default = jsonInt(1)
}

// What every click tool's description says.
const (
	clickWhere = " at a point of the sandbox's screen; x and y are pixels of the latest screenshot, or ref names an " +
		"element of its tree (sandbox_screenshot with tree: true)."
	clickAfter = " Returns where the pointer is and whether the screen changed; take a screenshot to see the effect."
)

func leftClickTool(sb Sandbox) tool {
	desc := "Left-click" + clickWhere + " count 3 triple-clicks (selects a line of text); modifiers holds keys down " +
		"meanwhile ([\"shift\"] extends a selection, [\"ctrl\"] adds to one)." + clickAfter
	return define("sandbox_click", desc, acts, func(ctx context.Context, project string, a leftClickArgs) (Result, error) {
		return click(ctx, sb, project, a.target, a.held, 1, a.Count)
	})
}

func clickTool(sb Sandbox, name, action string, button, count int) tool {
	desc := action + clickWhere + " modifiers holds keys down meanwhile (e.g. [\"ctrl\"])." + clickAfter
	return define(name, desc, acts, func(ctx context.Context, project string, a clickArgs) (Result, error) {
		return click(ctx, sb, project, a.target, a.held, button, count)
	})
}

func click(ctx context.Context, sb Sandbox, project string, t target, h held, button, count int) (Result, error) {
	if err := t.check(); err != nil {
		return Result{}, err
	}
	return act(ctx, sb, project, func(d Desktop, s scale) (string, error) {
		at, where, err := t.at(ctx, d, s)
		if err != nil {
			return "", err
		}
		if err := d.Click(ctx, at.X, at.Y, button, count, h.keys()...); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s%s.", clicked(button, count), where, h.holding()), nil
	})
}

func clicked(button, count int) string {
	name := map[int]string{1: "Left", 2: "Middle", 3: "Right"}[button]
	switch count {
	case 2:
		return "Double-clicked"
	case 3:
		return "Triple-clicked"
	}
	return name + "-clicked"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// hoverArgs are both coordinates or neither: without them, hover only
// reports where the pointer is.
type hoverArgs struct {
	X *int `json:"x,omitempty" jsonschema:"Horizontal position, in pixels of the latest screenshot; 0 is the left edge. Leave x and y out to only ask where the pointer is."`
	Y *int `json:"y,omitempty" jsonschema:"Vertical position, in pixels of the latest screenshot; 0 is the top edge."`
}

func (hoverArgs) TuneSchema(s *jsonschema.Schema) { atLeastZero(s, "x", "y") }

func hoverTool(sb Sandbox) tool {
	desc := "Move the mouse pointer to a point without clicking (to show a tooltip or open a hover menu); x and y " +
		"are pixels of the latest screenshot. Without x and y, only says where the pointer is."
	return define("sandbox_hover", desc, moves, func(ctx context.Context, project string, a hoverArgs) (Result, error) {
		if (a.X == nil) != (a.Y == nil) {
			return Result{}, hoverHalf(a)
		}
		return act(ctx, sb, project, func(d Desktop, s scale) (string, error) {
			if a.X == nil {
				return "", nil
			}
			at, err := s.point("x", *a.X, "y", *a.Y)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Moved the pointer to (%d, %d).", *a.X, *a.Y), d.Move(ctx, at.X, at.Y)
		})
	})
}

func hoverHalf(a hoverArgs) error {
	missing := "y"
	if a.X == nil {
		missing = "x"
	}
	return argError(missing, "is required with the other coordinate: give both x and y, or neither to ask where the pointer is")
}

type scrollArgs struct {
	point
	Direction string `json:"direction" jsonschema:"Which way to scroll: up, down, left or right."`
	Amount    int    `json:"amount,omitzero" jsonschema:"How many wheel clicks."`
	held
}

func (scrollArgs) TuneSchema(s *jsonschema.Schema) {
	point{}.TuneSchema(s)
	s.Properties["direction"].Enum = []any{"up", "down", "left", "right"}
	bound(s.Properties["amount"], 1, maxScrollAmount)
	s.Properties["amount"].Default = jsonInt(defaultScrollAmount)
	held{}.tune(s)
}

func scrollTool(sb Sandbox) tool {
	desc := fmt.Sprintf("Turn the mouse wheel over a point of the screen (pixels of the latest screenshot): direction up, "+
		"down, left or right, amount wheel clicks (1 to %d, default %d; one click scrolls about three lines). "+
		"modifiers [\"ctrl\"] zooms in most programs, [\"shift\"] scrolls sideways in some.", maxScrollAmount, defaultScrollAmount)
	return define("sandbox_scroll", desc, acts, func(ctx context.Context, project string, a scrollArgs) (Result, error) {
		return act(ctx, sb, project, func(d Desktop, s scale) (string, error) {
			at, err := s.point("x", a.X, "y", a.Y)
			if err != nil {
				return "", err
			}
			if err := d.Scroll(ctx, at.X, at.Y, a.Direction, a.Amount, a.keys()...); err != nil {
				return "", err
			}
			return fmt.Sprintf("Scrolled %s %s at (%d, %d)%s.", a.Direction, plural(a.Amount, "click"), a.X, a.Y, a.holding()), nil
		})
	})
}
