package tools

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// sizingCases are displays and the screenshot sizes the API's rule gives
// them: common displays, and the examples of Anthropic's vision
// documentation (1920x1080 and 3840x2160 become 1456x819 there; 1075x1520,
// within the long edge, is over the tiles; 2000x1500 is 1270x952 by its
// reference implementation).
var sizingCases = []struct{ display, shot desktop.Display }{
	{desktop.Display{Width: 1024, Height: 768}, desktop.Display{Width: 1024, Height: 768}},   // 37x28 = 1036 tiles
	{desktop.Display{Width: 1280, Height: 800}, desktop.Display{Width: 1280, Height: 800}},   // 46x29 = 1334
	{desktop.Display{Width: 1366, Height: 768}, desktop.Display{Width: 1366, Height: 768}},   // 49x28 = 1372
	{desktop.Display{Width: 1920, Height: 1080}, desktop.Display{Width: 1456, Height: 819}},  // 52x30 = 1560
	{desktop.Display{Width: 2560, Height: 1600}, desktop.Display{Width: 1389, Height: 868}},  // 50x31 = 1550
	{desktop.Display{Width: 3840, Height: 2160}, desktop.Display{Width: 1456, Height: 819}},  // 52x30
	{desktop.Display{Width: 2000, Height: 1500}, desktop.Display{Width: 1270, Height: 952}},  // 46x34 = 1564
	{desktop.Display{Width: 1075, Height: 1520}, desktop.Display{Width: 924, Height: 1307}},  // 33x47 = 1551
	{desktop.Display{Width: 1092, Height: 1092}, desktop.Display{Width: 1092, Height: 1092}}, // 39x39 = 1521
	{desktop.Display{Width: 800, Height: 2560}, desktop.Display{Width: 490, Height: 1568}},   // 18x56 = 1008
	{desktop.Display{Width: 320, Height: 240}, desktop.Display{Width: 320, Height: 240}},
}

func TestScreenshotsAreSizedByTheAPIsRule(t *testing.T) {
	for _, tc := range sizingCases {
		got := scaleFor(tc.display).shot
		if got != tc.shot {
			t.Errorf("%v: screenshot %v, want %v", tc.display, got, tc.shot)
		}
		w, h := got.Width, got.Height
		tiles := ceilDiv(w, 28) * ceilDiv(h, 28)
		if max(w, h) > 1568 || tiles > 1568 {
			t.Errorf("%v: %dx%d has a long edge of %d and %d tiles: the API would resize it", tc.display, w, h, max(w, h), tiles)
		}
		// The largest of the display's aspect: one pixel more on the long
		// edge no longer fits.
		long, short, dLong, dShort := w, h, tc.display.Width, tc.display.Height
		if h > w {
			long, short, dLong, dShort = h, w, tc.display.Height, tc.display.Width
		}
		if want := int(math.RoundToEven(float64(long) * float64(dShort) / float64(dLong))); short != want {
			t.Errorf("%v: the short edge is %d, want %d for a long edge of %d", tc.display, short, want, long)
		}
		next := long + 1
		nextShort := int(math.RoundToEven(float64(next) * float64(dShort) / float64(dLong)))
		if got != tc.display && next <= dLong && fitsAPI(next, nextShort) {
			t.Errorf("%v: %dx%d is not the largest: a long edge of %d fits too", tc.display, w, h, next)
		}
	}
}

func TestScreenshotPointsMapBackExactly(t *testing.T) {
	for _, tc := range sizingCases {
		s := scaleFor(tc.display)
		prev := image.Pt(-1, -1)
		for v := range max(s.shot.Width, s.shot.Height) {
			x, y := min(v, s.shot.Width-1), min(v, s.shot.Height-1)
			p, err := s.point("x", x, "y", y)
			if err != nil {
				t.Fatal(err)
			}
			if back := s.toShot(p); back != image.Pt(x, y) {
				t.Fatalf("%v: screenshot (%d, %d) -> display %v -> screenshot %v", tc.display, x, y, p, back)
			}
			if (x > 0 && x == v && p.X <= prev.X) || (y > 0 && y == v && p.Y <= prev.Y) {
				t.Fatalf("%v: screenshot (%d, %d) -> %v, after %v", tc.display, x, y, p, prev)
			}
			prev = p
		}
		last, _ := s.point("x", s.shot.Width-1, "y", s.shot.Height-1)
		if r := s.ratio(); float64(last.X) < float64(tc.display.Width-1)-r || float64(last.Y) < float64(tc.display.Height)-1-r {
			t.Errorf("%v: the last screenshot pixel reaches display %v only", tc.display, last)
		}
	}
}

func TestRegionsCoverTheirDisplayPixels(t *testing.T) {
	s := scaleFor(desktop.Display{Width: 2560, Height: 1600})
	for _, tc := range []struct{ shot, display image.Rectangle }{
		{image.Rect(0, 0, 1389, 868), image.Rect(0, 0, 2560, 1600)},
		{image.Rect(100, 50, 200, 100), image.Rect(184, 92, 369, 185)},
		{image.Rect(1388, 867, 1389, 868), image.Rect(2558, 1598, 2560, 1600)},
	} {
		if got := s.toDisplay(tc.shot); got != tc.display {
			t.Errorf("%v: display %v, want %v", tc.shot, got, tc.display)
		}
	}
}

func BenchmarkResize2560x1600(b *testing.B) {
	s := scaleFor(desktop.Display{Width: 2560, Height: 1600})
	shot := busyScreen(2560, 1600)
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := encodeAt(shot, s.shot, desktop.FormatPNG, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// busyScreen is a screenshot like a screen's: opaque, mostly flat, with a
// band of busy detail.
func busyScreen(w, h int) desktop.Screenshot {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		switch {
		case i%4 == 3:
			img.Pix[i] = 255
		case i/4/w%100 < 20:
			img.Pix[i] = byte(i * 7)
		default:
			img.Pix[i] = 0x40
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return desktop.Screenshot{PNG: buf.Bytes(), Width: w, Height: h}
}
