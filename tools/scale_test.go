package tools

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

func TestScaleFor(t *testing.T) {
	for _, tc := range []struct {
		display, shot desktop.Display
	}{
		{desktop.Display{Width: 1280, Height: 800}, desktop.Display{Width: 1280, Height: 800}},
		{desktop.Display{Width: 1568, Height: 1000}, desktop.Display{Width: 1568, Height: 1000}},
		{desktop.Display{Width: 1920, Height: 1080}, desktop.Display{Width: 1568, Height: 882}},
		{desktop.Display{Width: 3840, Height: 2160}, desktop.Display{Width: 1568, Height: 882}},
		{desktop.Display{Width: 1200, Height: 2400}, desktop.Display{Width: 784, Height: 1568}},
	} {
		if got := scaleFor(tc.display).shot; got != tc.shot {
			t.Errorf("%v: screenshot %v, want %v", tc.display, got, tc.shot)
		}
	}
}

func TestScaledPointsCoverTheDisplay(t *testing.T) {
	s := scaleFor(desktop.Display{Width: 1920, Height: 1080})
	prev := -1
	for x := range s.shot.Width {
		dx, _, err := s.point("x", x, "y", 0)
		if err != nil || dx <= prev || dx >= 1920 {
			t.Fatalf("x %d -> %d (after %d): %v", x, dx, prev, err)
		}
		prev = dx
	}
	if prev < 1918 {
		t.Errorf("the last screenshot column reaches display column %d", prev)
	}
}

func BenchmarkResize2560x1600(b *testing.B) {
	s := scaleFor(desktop.Display{Width: 2560, Height: 1600})
	// Like a screen: opaque, mostly flat, with a band of busy detail.
	img := image.NewRGBA(image.Rect(0, 0, 2560, 1600))
	for i := range img.Pix {
		switch {
		case i%4 == 3:
			img.Pix[i] = 255
		case i/4/2560%100 < 20:
			img.Pix[i] = byte(i * 7)
		default:
			img.Pix[i] = 0x40
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.resize(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
