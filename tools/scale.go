package tools

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"golang.org/x/image/draw"

	"github.com/pilot-sandbox/pilot-sandbox/args"
)

// MaxScreenshotEdge is the longest edge of a screenshot a model is sent:
// larger displays are scaled down to it, and coordinates scaled back up.
const MaxScreenshotEdge = 1568

// scale maps between screenshot pixels, which the model sees and gives,
// and display pixels, which the desktop uses.
type scale struct {
	display desktop.Display
	shot    desktop.Display // the screenshot's size
	factor  float64         // shot = display * factor; 1 when not scaled
}

func scaleFor(d desktop.Display) scale {
	long := max(d.Width, d.Height)
	if long <= MaxScreenshotEdge {
		return scale{display: d, shot: d, factor: 1}
	}
	f := float64(MaxScreenshotEdge) / float64(long)
	return scale{
		display: d,
		shot:    desktop.Display{Width: int(math.Round(float64(d.Width) * f)), Height: int(math.Round(float64(d.Height) * f))},
		factor:  f,
	}
}

func (s scale) scaled() bool { return s.factor != 1 }

// point checks a screenshot point and maps it to the display. The error
// names the argument and gives the valid range.
func (s scale) point(xName string, x int, yName string, y int) (int, int, error) {
	if x < 0 || x >= s.shot.Width {
		return 0, 0, &args.Error{Field: xName, Reason: fmt.Sprintf("is %d, off the screen: it must be from 0 to %d (the screenshot is %dx%d pixels)", x, s.shot.Width-1, s.shot.Width, s.shot.Height)}
	}
	if y < 0 || y >= s.shot.Height {
		return 0, 0, &args.Error{Field: yName, Reason: fmt.Sprintf("is %d, off the screen: it must be from 0 to %d (the screenshot is %dx%d pixels)", y, s.shot.Height-1, s.shot.Width, s.shot.Height)}
	}
	if !s.scaled() {
		return x, y, nil
	}
	// The display pixel under the centre of the screenshot pixel, so the
	// last screenshot pixel reaches the last display pixel.
	return min(int((float64(x)+0.5)/s.factor), s.display.Width-1),
		min(int((float64(y)+0.5)/s.factor), s.display.Height-1), nil
}

// resize scales a display-sized PNG to the screenshot's size.
func (s scale) resize(pngData []byte) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		return nil, err
	}
	dst := image.NewRGBA(image.Rect(0, 0, s.shot.Width, s.shot.Height))
	// BiLinear, stretched over the source pixels when shrinking, averages
	// them instead of skipping some: thin text stays legible.
	draw.BiLinear.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&out, dst); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
