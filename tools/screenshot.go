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
	Format  string `json:"format,omitempty" jsonschema:"png, lossless, or jpeg, many times smaller for pictures and photos (not for text)."`
	Quality int    `json:"quality,omitzero" jsonschema:"The JPEG's quality (with format jpeg only; 75 when left out)."`
	Region  []int  `json:"region,omitempty" jsonschema:"Zoom: [x1, y1, x2, y2], the corners of a rectangle of the latest screenshot (in its pixels), to see at the display's full resolution."`
}

func (screenshotArgs) TuneSchema(s *jsonschema.Schema) {
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
		"then says how its pixels map back. To see a web page, open it first with sandbox_exec: pilot-open URL (Chromium, " +
		"maximized on this screen)."
	return define("sandbox_screenshot", desc, func(ctx context.Context, project string, a screenshotArgs) (Result, error) {
		if a.Quality != 0 && a.Format != desktop.FormatJPEG {
			return Result{}, argError("quality", `applies to JPEG only: add "format": "jpeg", or leave quality out`)
		}
		d, err := sb.Desktop(ctx, project)
		if err != nil {
			return Result{}, err
		}
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
	})
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
