package desktop

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
)

// Screenshot is a PNG of the display, or of a region of it.
type Screenshot struct {
	PNG    []byte
	Width  int
	Height int
}

// Screenshot captures the whole display as a PNG.
func (d *Desktop) Screenshot(ctx context.Context) (Screenshot, error) {
	return d.screenshot(ctx, request{Op: "screenshot"}, d.display)
}

// ScreenshotRegion captures a rectangle of the display, at full
// resolution, as a PNG. It must lie on the display.
func (d *Desktop) ScreenshotRegion(ctx context.Context, r image.Rectangle) (Screenshot, error) {
	if r.Empty() {
		return Screenshot{}, fmt.Errorf("screenshot of %v: the region is empty", r)
	}
	req := request{Op: "screenshot", X: r.Min.X, Y: r.Min.Y, Width: r.Dx(), Height: r.Dy()}
	return d.screenshot(ctx, req, Display{Width: r.Dx(), Height: r.Dy()})
}

// screenshot asks the agent for a PNG of size want. The answer is bounded
// by what such a PNG can take, and its header must give that size: a PNG
// is only ever decoded by its size, and one the sandbox forged may claim
// any.
func (d *Desktop) screenshot(ctx context.Context, req request, want Display) (Screenshot, error) {
	req.maxAnswer = screenshotAnswerBound(want)
	resp, err := d.call(ctx, req, requestTimeout)
	if err != nil {
		return Screenshot{}, err
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(resp.PNG))
	if err != nil {
		return Screenshot{}, fmt.Errorf("%w: %v", ErrBadScreenshot, err)
	}
	if cfg.Width != want.Width || cfg.Height != want.Height {
		return Screenshot{}, fmt.Errorf("%w: it is %dx%d, the display %dx%d",
			ErrBadScreenshot, cfg.Width, cfg.Height, want.Width, want.Height)
	}
	return Screenshot{PNG: resp.PNG, Width: cfg.Width, Height: cfg.Height}, nil
}

// The formats a screenshot can be sent in.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
	// DefaultJPEGQuality is the quality of a JPEG when none is asked for:
	// the one Anthropic's computer-use quickstart sends screenshots at.
	DefaultJPEGQuality = 75
)

// Encode returns the screenshot in a format, with its MIME type: its PNG
// as it is, or JPEG at a quality from 1 to 100 (0 for the default).
func (s Screenshot) Encode(format string, quality int) ([]byte, string, error) {
	if format == FormatPNG || format == "" {
		return s.PNG, "image/png", nil
	}
	img, err := png.Decode(bytes.NewReader(s.PNG))
	if err != nil {
		return nil, "", fmt.Errorf("decode screenshot: %w", err)
	}
	return Encode(img, format, quality)
}

// Encode writes an image as a PNG (lossless; sharp text and lines) or a
// JPEG (smaller for photos, video and gradients), and gives its MIME type.
func Encode(img image.Image, format string, quality int) ([]byte, string, error) {
	var out bytes.Buffer
	switch format {
	case FormatPNG, "":
		// Screens are mostly flat colour: the fastest level compresses
		// them well, and the best one takes several times as long.
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&out, img); err != nil {
			return nil, "", err
		}
		return out.Bytes(), "image/png", nil
	case FormatJPEG:
		if quality == 0 {
			quality = DefaultJPEGQuality
		}
		if quality < 1 || quality > 100 {
			return nil, "", fmt.Errorf("JPEG quality %d: it must be from 1 to 100", quality)
		}
		if err := jpeg.Encode(&out, img, &jpeg.Options{Quality: quality}); err != nil {
			return nil, "", err
		}
		return out.Bytes(), "image/jpeg", nil
	}
	return nil, "", fmt.Errorf("image format %q: it must be %s or %s", format, FormatPNG, FormatJPEG)
}
