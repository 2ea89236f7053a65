package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Bounds of sandbox_key's keys.
const (
	maxKeysLength = 1000
	maxKeyCombos  = 100
)

type typeArgs struct {
	Text string `json:"text" jsonschema:"The text to type."`
	Ref  string `json:"ref,omitempty" jsonschema:"An element's ref from the latest sandbox_screenshot with tree: true (e.g. a text field's): it gets the keyboard focus (its window comes to the front) before the text is typed."`
}

func (typeArgs) TuneSchema(s *jsonschema.Schema) { textBounds(s, "text", 1, MaxTextLength) }

// textBounds bounds a text argument's length, in characters.
func textBounds(s *jsonschema.Schema, name string, min, max int) {
	p := s.Properties[name]
	if min > 0 {
		p.MinLength = jsonschema.Ptr(min)
	}
	p.MaxLength = jsonschema.Ptr(max)
}

func typeTool(sb Sandbox) tool {
	desc := fmt.Sprintf("Type text into the sandbox's focused window, exactly as given: any Unicode, a newline presses "+
		"Enter, a tab presses Tab. Click the field first to focus it, or give its ref (from sandbox_screenshot with "+
		"tree: true) to focus it. 1 to %d characters. For shortcuts and special keys (ctrl+c, Escape, arrows) use "+
		"sandbox_key.", MaxTextLength)
	return define("sandbox_type", desc, acts, func(ctx context.Context, project string, a typeArgs) (Result, error) {
		if err := checkTypeable(a.Text); err != nil {
			return Result{}, err
		}
		if a.Ref != "" {
			if err := checkRef("ref", a.Ref); err != nil {
				return Result{}, err
			}
		}
		return act(ctx, sb, project, func(d Desktop, _ scale) (string, error) {
			typed := fmt.Sprintf("Typed %d characters", len([]rune(a.Text)))
			if a.Ref == "" {
				return typed + ".", d.Type(ctx, a.Text)
			}
			el, err := d.Focus(ctx, a.Ref)
			if err != nil {
				return "", refError(err)
			}
			if err := d.TypeInto(ctx, a.Ref, a.Text); err != nil {
				return "", err
			}
			return fmt.Sprintf("%s into %s (%s).", typed, a.Ref, elementName(el)), nil
		})
	})
}

// checkTypeable refuses control characters that are not keys of a keyboard.
func checkTypeable(t string) error {
	for i, r := range []rune(t) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return &args.Error{Field: "text", Reason: fmt.Sprintf("has the control character U+%04X at position %d; for special keys use sandbox_key", r, i)}
		}
	}
	return nil
}

type keyArgs struct {
	Keys   string `json:"keys" jsonschema:"The keys to press, e.g. \"ctrl+s\" or \"Down Down Return\"."`
	HoldMs int    `json:"holdMs,omitzero" jsonschema:"Hold the one combination down this many milliseconds before releasing it (past about 660, the key repeats)."`
}

// maxHoldMs bounds sandbox_key's holdMs.
const maxHoldMs = 10000

func (keyArgs) TuneSchema(s *jsonschema.Schema) {
	textBounds(s, "keys", 1, maxKeysLength)
	bound(s.Properties["holdMs"], 1, maxHoldMs)
}

func keyTool(sb Sandbox) tool {
	desc := "Press keys or key combinations in the sandbox, in order, as xdotool's key command names them: " +
		"Return, Escape, BackSpace, Tab, Delete, Up, Down, Left, Right, Home, End, Page_Up, F1..F12, space, " +
		"a, A, 1, combinations joined with + (ctrl+c, ctrl+shift+t, alt+F4, super), several separated by " +
		"spaces (\"ctrl+a BackSpace\"). Modifiers: ctrl, shift, alt, super. holdMs holds one combination down " +
		"that long. To type text use sandbox_type."
	return define("sandbox_key", desc, acts, func(ctx context.Context, project string, a keyArgs) (Result, error) {
		if err := checkKeys(a.Keys, a.HoldMs > 0); err != nil {
			return Result{}, err
		}
		return act(ctx, sb, project, func(d Desktop, _ scale) (string, error) {
			if err := pressKeys(ctx, d, a); err != nil {
				return "", err
			}
			if a.HoldMs > 0 {
				return fmt.Sprintf("Held %s down for %d ms.", strings.TrimSpace(a.Keys), a.HoldMs), nil
			}
			return "Pressed " + strings.Join(strings.Fields(a.Keys), ", ") + ".", nil
		})
	})
}

// pressKeys presses (or holds) the keys; a name the agent does not know
// is the keys argument's fault.
func pressKeys(ctx context.Context, d Desktop, a keyArgs) error {
	var err error
	if a.HoldMs > 0 {
		err = d.HoldKeys(ctx, strings.TrimSpace(a.Keys), time.Duration(a.HoldMs)*time.Millisecond)
	} else {
		err = d.Keys(ctx, a.Keys)
	}
	if errors.Is(err, service.ErrAgent) {
		return argError("keys", strings.TrimPrefix(err.Error(), service.ErrAgent.Error()+": ")+
			"; use X key names such as Return, Escape, BackSpace, Tab, Up, F5, ctrl+c")
	}
	return err
}

// checkKeys accepts xdotool key syntax only: names of letters, digits and
// underscores (or one printable character), joined by +, separated by
// spaces; only one combination to hold.
func checkKeys(keys string, hold bool) error {
	combos := strings.Fields(keys)
	if len(combos) == 0 {
		return &args.Error{Field: "keys", Reason: "must name at least one key"}
	}
	if hold && len(combos) > 1 {
		return &args.Error{Field: "keys", Reason: fmt.Sprintf("names %d combinations; with holdMs, name the one to hold (e.g. \"shift\" or \"ctrl+a\")", len(combos))}
	}
	if len(combos) > maxKeyCombos {
		return &args.Error{Field: "keys", Reason: fmt.Sprintf("may press at most %d combinations at once", maxKeyCombos)}
	}
	for _, combo := range combos {
		for _, part := range strings.Split(combo, "+") {
			if !keyName(part) {
				return &args.Error{Field: "keys", Reason: fmt.Sprintf("has %q, which is not a key name: write combinations like ctrl+c, "+
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
