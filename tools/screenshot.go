package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

type screenshotArgs struct {
	Format   string `json:"format,omitempty" jsonschema:"png, lossless, or jpeg, many times smaller for pictures and photos (not for text)."`
	Quality  int    `json:"quality,omitzero" jsonschema:"The JPEG's quality (with format jpeg only; 75 when left out)."`
	Region   []int  `json:"region,omitempty" jsonschema:"Zoom: [x1, y1, x2, y2], the corners of a rectangle of the latest screenshot (in its pixels), to see at the display's full resolution."`
	Tree     bool   `json:"tree,omitempty" jsonschema:"Also list what is on the screen as a tree of elements (windows, buttons, fields, links, text), each with its role, name, state, bounds and a ref that sandbox_click and sandbox_type take instead of x and y."`
	Query    string `json:"query,omitempty" jsonschema:"With tree: list only the elements whose role, name or value contains this text (any case), and what they are in."`
	Scope    string `json:"scope,omitempty" jsonschema:"With tree: list only the element with this ref and what is in it."`
	MaxNodes int    `json:"maxNodes,omitzero" jsonschema:"With tree: list at most this many elements, in order (300 when left out)."`
}

// view is what the arguments ask to see of the tree, checked.
func (a screenshotArgs) view() (treeView, error) {
	v := treeView{query: a.Query, scope: a.Scope, maxNodes: a.MaxNodes}
	if !a.Tree {
		for _, o := range []struct {
			name string
			set  bool
		}{{"query", a.Query != ""}, {"scope", a.Scope != ""}, {"maxNodes", a.MaxNodes != 0}} {
			if o.set {
				return v, argError(o.name, `applies to the tree only: add "tree": true, or leave it out`)
			}
		}
		return v, nil
	}
	if a.Scope != "" {
		return v, checkRef("scope", a.Scope)
	}
	return v, nil
}

func (screenshotArgs) TuneSchema(s *jsonschema.Schema) {
	textBounds(s, "query", 1, maxQueryLength)
	// No default in the schema: the decoder would fill it in, and maxNodes
	// without tree is refused.
	bound(s.Properties["maxNodes"], 1, maxMaxNodes)
	s.Properties["format"].Enum = []any{desktop.FormatPNG, desktop.FormatJPEG}
	s.Properties["format"].Default = json.RawMessage(strconv.Quote(desktop.FormatPNG))
	bound(s.Properties["quality"], 1, 100)
	r := s.Properties["region"]
	r.MinItems, r.MaxItems = jsonschema.Ptr(4), jsonschema.Ptr(4)
	r.Items.Minimum = jsonschema.Ptr(0.0)
}

func screenshotTool(sb Sandbox) tool {
	desc := "Take a screenshot of the sandbox's screen: an image, and a line giving its size. x and y in the other " +
		"tools are pixels of this image. Take one after acting to see the effect. format jpeg makes pictures, " +
		"photos and video many times smaller and is enough to see what is where; keep png (the default) for text " +
		"and terminals, where it is sharper and no larger. region [x1, y1, x2, y2] zooms into that rectangle at the display's full resolution; the text " +
		"then says how its pixels map back. tree true adds the accessibility tree of what is on the screen: one line per " +
		"element with a ref to click or type into (query and scope narrow it, maxNodes bounds it, 300 when left out). " +
		"To see a web page, open it first with sandbox_exec: pilot-open URL (Chromium, maximized on this screen)."
	return define("sandbox_screenshot", desc, looks, func(ctx context.Context, project string, a screenshotArgs) (Result, error) {
		if a.Quality != 0 && a.Format != desktop.FormatJPEG {
			return Result{}, argError("quality", `applies to JPEG only: add "format": "jpeg", or leave quality out`)
		}
		view, err := a.view()
		if err != nil {
			return Result{}, err
		}
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
		res, err := shoot(ctx, d, a)
		if err != nil || !a.Tree {
			return res, err
		}
		return withTree(ctx, d, res, view)
	})
}

// shoot takes the screenshot, or the zoom, asked for.
func shoot(ctx context.Context, d Desktop, a screenshotArgs) (Result, error) {
	if a.Region != nil {
		return zoom(ctx, d, a)
	}
	shot, err := d.Screenshot(ctx)
	if err != nil {
		return Result{}, err
	}
	// The screenshot's own size is the display's, whatever was recorded.
	s := scaleFor(desktop.Display{Width: shot.Width, Height: shot.Height})
	return picture(shot, s.shot, a, wholeNote(s))
}

// withTree adds the screen's accessibility tree to a screenshot's result,
// in pixels of the whole screenshot (a zoom's too: the other tools take
// those). A screen with no tree makes the result an error that says why.
func withTree(ctx context.Context, d Desktop, res Result, v treeView) (Result, error) {
	t, err := d.Tree(ctx)
	if err != nil {
		return Result{}, err
	}
	text, isErr := treeText(t, scaleFor(d.Display()), v)
	res.Content = append(res.Content, Content{Type: "text", Text: text})
	res.IsError = isErr
	return res, nil
}

func wholeNote(s scale) string {
	if !s.scaled() {
		return fmt.Sprintf("Screenshot of the whole %dx%d screen; coordinates are pixels of this image.", s.shot.Width, s.shot.Height)
	}
	return fmt.Sprintf("Screenshot of the whole screen, %dx%d pixels, scaled down from the %dx%d display (a pixel here "+
		"is %.3g of its pixels, the most a model's API takes without resizing). Give coordinates in pixels of this "+
		"image; they are scaled back to the display. To read small text, zoom with region.",
		s.shot.Width, s.shot.Height, s.display.Width, s.display.Height, s.ratio())
}

// zoom shows a region of the screenshot at the display's full resolution
// (fitted to the API's limits), and says how its pixels map back.
func zoom(ctx context.Context, d Desktop, a screenshotArgs) (Result, error) {
	s := scaleFor(d.Display())
	r, err := s.region(a.Region)
	if err != nil {
		return Result{}, err
	}
	dr := s.toDisplay(r)
	shot, err := d.ScreenshotRegion(ctx, dr)
	if err != nil {
		return Result{}, err
	}
	w, h := fitSize(shot.Width, shot.Height)
	return picture(shot, desktop.Display{Width: w, Height: h}, a, zoomNote(s, r, dr, w, h))
}

// region checks a rectangle of screenshot pixels given as [x1, y1, x2, y2].
func (s scale) region(v []int) (image.Rectangle, error) {
	r := image.Rect(v[0], v[1], v[2], v[3])
	got := fmt.Sprintf("; got %v", v)
	switch {
	case v[2] <= v[0] || v[3] <= v[1]:
		return r, argError("region", "must be [x1, y1, x2, y2] with x1 < x2 and y1 < y2, the corners of a rectangle"+got)
	case v[2] > s.shot.Width || v[3] > s.shot.Height:
		return r, argError("region", fmt.Sprintf("reaches past the screenshot, which is %dx%d pixels", s.shot.Width, s.shot.Height)+got)
	}
	return r, nil
}

// zoomNote says what a zoomed image shows and how a point of it maps to
// the screenshot the other tools take points of.
func zoomNote(s scale, r, dr image.Rectangle, w, h int) string {
	// Image pixel u is display pixel dr.Min.X + u*dr.Dx()/w, which is
	// screenshot pixel (that)*shot/display.
	fx := float64(s.shot.Width) / float64(s.display.Width)
	fy := float64(s.shot.Height) / float64(s.display.Height)
	kx, ky := float64(dr.Dx())/float64(w)*fx, float64(dr.Dy())/float64(h)*fy
	return fmt.Sprintf("Zoom into [%d, %d, %d, %d] of the screenshot: this %dx%d image shows it at %s times the "+
		"screenshot's size. Its point (u, v) is the screenshot point (%s, %s); the other tools take screenshot points.",
		r.Min.X, r.Min.Y, r.Max.X, r.Max.Y, w, h, num(1/kx),
		affine(float64(dr.Min.X)*fx, "u", kx), affine(float64(dr.Min.Y)*fy, "v", ky))
}

// affine writes "a + v × k", leaving out what is 1.
func affine(a float64, v string, k float64) string {
	if num(k) == "1" {
		return num(a) + " + " + v
	}
	return num(a) + " + " + v + " × " + num(k)
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }

// picture is the screenshot as a result: sized w x h and encoded as asked,
// then the note.
func picture(shot desktop.Screenshot, size desktop.Display, a screenshotArgs, note string) (Result, error) {
	data, mime, err := encodeAt(shot, size, a.Format, a.Quality)
	if err != nil {
		return Result{}, err
	}
	return Result{Content: []Content{
		{Type: "image", Data: data, MimeType: mime},
		{Type: "text", Text: note},
	}}, nil
}

// encodeAt encodes a screenshot at a size: its PNG as it is when nothing
// changes, else decoded, resized if need be, and encoded.
func encodeAt(shot desktop.Screenshot, size desktop.Display, format string, quality int) ([]byte, string, error) {
	if size.Width == shot.Width && size.Height == shot.Height {
		return shot.Encode(format, quality)
	}
	img, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil {
		return nil, "", fmt.Errorf("decode screenshot: %w", err)
	}
	return desktop.Encode(resize(img, size.Width, size.Height), format, quality)
}
