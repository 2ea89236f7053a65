package activity

import (
	"bytes"
	"compress/zlib"
	"image"
	"image/png"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/internal/pngtest"
)

// screenLike is a 1280x800 PNG with text-like detail, made as the
// desktop agent makes its screenshots (resources/agent/agent.py png_rgb):
// truecolor without alpha, a filter byte "none" a row, zlib at the
// default level. png.Decode gives it as *image.RGBA.
func screenLike(t testing.TB) []byte {
	const w, h = 1280, 800
	var rows bytes.Buffer
	zw := zlib.NewWriter(&rows)
	line := make([]byte, 1+3*w)
	for y := range h {
		for x := range w {
			c := [3]byte{uint8(x), uint8(y), uint8(x ^ y)}
			if (x/7+y/13)%5 == 0 {
				c = [3]byte{0x10, 0x10, 0x10}
			}
			copy(line[1+3*x:], c[:])
		}
		zw.Write(line)
	}
	zw.Close()
	return pngtest.File(w, h, 8, 2, rows.Bytes()) // 8 bits, truecolor
}

// The fast path for *image.RGBA gives the same pixels as the generic one,
// for a size that does not divide evenly too.
func TestShrinkFastPathMatches(t *testing.T) {
	src, err := png.Decode(bytes.NewReader(screenLike(t)))
	if err != nil {
		t.Fatal(err)
	}
	rgba, ok := src.(*image.RGBA)
	if !ok {
		t.Fatalf("decoded as %T", src)
	}
	sub := rgba.SubImage(image.Rect(3, 5, 1003, 707)).(*image.RGBA)
	for _, img := range []*image.RGBA{rgba, sub} {
		for _, w := range []int{ThumbnailWidth, 333, 1} {
			fast, slow := shrink(img, w), shrinkAny(img, w)
			if fast.Bounds() != slow.Bounds() {
				t.Fatalf("bounds %v, want %v", fast.Bounds(), slow.Bounds())
			}
			b := fast.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					if fast.At(x, y) != slow.At(x, y) {
						t.Fatalf("width %d, pixel (%d,%d): %v, want %v", w, x, y, fast.At(x, y), slow.At(x, y))
					}
				}
			}
		}
	}
}

// BenchmarkThumbnail: a recorded acting tool makes two thumbnails of a
// 1280x800 screenshot on its path (tools/record.go).
func BenchmarkThumbnail(b *testing.B) {
	data := screenLike(b)
	for b.Loop() {
		if _, err := Thumbnail(data); err != nil {
			b.Fatal(err)
		}
	}
}
