package tools

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

func screenshotTool(sb Sandbox) tool {
	desc := "Take a screenshot of the sandbox's whole screen. Returns a PNG image and its size in pixels; " +
		"x and y in the other tools are pixels of this image. Take one after acting to see the effect."
	return define("sandbox_screenshot", desc, func(ctx context.Context, project string, _ noArgs) (Result, error) {
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
	return define("sandbox_clipboard_get", desc, func(ctx context.Context, project string, _ noArgs) (Result, error) {
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
	return define("sandbox_clipboard_set", desc, func(ctx context.Context, project string, a clipboardArgs) (Result, error) {
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
