package tools

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

func clipboardGetTool(sb Sandbox) tool {
	desc := "Return the text on the sandbox's clipboard (what ctrl+c copied there)."
	return define("sandbox_clipboard_get", desc, looks, func(ctx context.Context, project string, _ noArgs) (Result, error) {
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

type clipboardArgs struct {
	Text string `json:"text" jsonschema:"The text to put on the clipboard."`
}

func (clipboardArgs) TuneSchema(s *jsonschema.Schema) { textBounds(s, "text", 0, MaxTextLength) }

func clipboardSetTool(sb Sandbox) tool {
	desc := fmt.Sprintf("Put text on the sandbox's clipboard, to paste with ctrl+v (ctrl+shift+v in a terminal). "+
		"Up to %d characters.", MaxTextLength)
	return define("sandbox_clipboard_set", desc, moves, func(ctx context.Context, project string, a clipboardArgs) (Result, error) {
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
		if err := d.SetClipboard(ctx, a.Text); err != nil {
			return Result{}, err
		}
		return Text(fmt.Sprintf("Put %d characters on the clipboard.", len([]rune(a.Text)))), nil
	})
}
