package tools

import (
	"fmt"
	"image"
	"math"

	"golang.org/x/image/draw"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// The limits within which Anthropic's API takes an image as it is (its
// vision documentation, "How Claude resizes and pads images"): a larger one
// is resized again on its side, and a model's clicks on it then drift. The
// image is cut into tiles of 28x28 pixels, the last ones padded.
const (
	// maxImageEdge bounds each side, rounded up to whole tiles.
	maxImageEdge = 1568
	// maxImageTiles bounds ceil(width/28) * ceil(height/28).
	maxImageTiles = 1568
	// imageTile is a tile's side in pixels.
	imageTile = 28
)

// fitsAPI says whether the API takes an image of w x h pixels as it is.
func fitsAPI(w, h int) bool {
	tw, th := ceilDiv(w, imageTile), ceilDiv(h, imageTile)
	return tw*imageTile <= maxImageEdge && th*imageTile <= maxImageEdge && tw*th <= maxImageTiles
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// fitSize is the size the API resizes a w x h image to, by its documented
// reference: the largest size of the same aspect that fits, searched along
// the long edge, the short one rounded half to even (as Python's round). An
// image of that size is not resized again. Fitting only shrinks as the long
// edge does, so a binary search finds the largest.
func fitSize(w, h int) (int, int) {
	if fitsAPI(w, h) {
		return w, h
	}
	if h > w {
		fh, fw := fitSize(h, w)
		return fw, fh
	}
	aspect := float64(w) / float64(h)
	short := func(long int) int { return max(1, int(math.RoundToEven(float64(long)/aspect))) }
	lo, hi := 1, w // lo fits, hi does not
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if fitsAPI(mid, short(mid)) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, short(lo)
}

// scale maps between screenshot pixels, which the model sees and gives,
// and display pixels, which the desktop uses. A screenshot is the display
// sized by fitSize; each axis has its own ratio, as rounding leaves them a
// hair apart.
type scale struct {
	display desktop.Display
	shot    desktop.Display // the screenshot's size
}

func scaleFor(d desktop.Display) scale {
	w, h := fitSize(d.Width, d.Height)
	return scale{display: d, shot: desktop.Display{Width: w, Height: h}}
}

func (s scale) scaled() bool { return s.shot != s.display }

// ratio is how many display pixels one screenshot pixel spans, across.
func (s scale) ratio() float64 { return float64(s.display.Width) / float64(s.shot.Width) }

// point checks a screenshot point and maps it to the display. The error
// names the argument and gives the valid range.
func (s scale) point(xName string, x int, yName string, y int) (image.Point, error) {
	if x < 0 || x >= s.shot.Width {
		return image.Point{}, s.offScreen(xName, x, s.shot.Width)
	}
	if y < 0 || y >= s.shot.Height {
		return image.Point{}, s.offScreen(yName, y, s.shot.Height)
	}
	// The display pixel under the centre of the screenshot pixel, so the
	// last screenshot pixel reaches the last display pixel.
	return image.Pt(centre(x, s.shot.Width, s.display.Width), centre(y, s.shot.Height, s.display.Height)), nil
}

func (s scale) offScreen(name string, v, size int) error {
	return &args.Error{Field: name, Reason: fmt.Sprintf("is %d, off the screen: it must be from 0 to %d (the screenshot is %dx%d pixels)",
		v, size-1, s.shot.Width, s.shot.Height)}
}

// centre maps v of a span of from pixels onto a span of to: the pixel under
// the centre of pixel v, (v + 1/2) * to / from, in integers.
func centre(v, from, to int) int { return min((2*v+1)*to/(2*from), to-1) }

// toShot maps a display point to the screenshot pixel under its centre;
// toShot(point(v)) is v again.
func (s scale) toShot(p image.Point) image.Point {
	return image.Pt(centre(max(p.X, 0), s.display.Width, s.shot.Width), centre(max(p.Y, 0), s.display.Height, s.shot.Height))
}

// toDisplay maps a rectangle of screenshot pixels (Max exclusive) to the
// display pixels it covers, whole pixels outward.
func (s scale) toDisplay(r image.Rectangle) image.Rectangle {
	sw, sh, dw, dh := s.shot.Width, s.shot.Height, s.display.Width, s.display.Height
	return image.Rect(r.Min.X*dw/sw, r.Min.Y*dh/sh, ceilDiv(r.Max.X*dw, sw), ceilDiv(r.Max.Y*dh, sh))
}

// resize scales an image to w x h. BiLinear, stretched over the source
// pixels when shrinking, averages them instead of skipping some: thin text
// stays legible.
func resize(src image.Image, w, h int) image.Image {
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.BiLinear.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	return dst
}
