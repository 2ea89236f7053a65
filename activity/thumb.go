package activity

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
)

// The thumbnails of an acting tool: small enough that a timeline of
// hundreds holds in a few MiB (FileBytes), big enough to tell what the
// screen showed.
const (
	ThumbnailWidth   = 320
	thumbnailQuality = 60
)

// Thumbnail makes a JPEG thumbnail, ThumbnailWidth pixels wide, of a PNG
// screenshot. It decodes only a PNG whose header gives a size the caller
// already checked (desktop.Screenshot does).
func Thumbnail(pngData []byte) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		return nil, fmt.Errorf("decode screenshot: %w", err)
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, shrink(src, ThumbnailWidth), &jpeg.Options{Quality: thumbnailQuality}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// shrink scales src down to width w, averaging each block of pixels (a
// nearest pixel would drop thin lines of text).
func shrink(src image.Image, w int) image.Image {
	if rgba, ok := src.(*image.RGBA); ok && rgba.Bounds().Dx() > w {
		return shrinkRGBA(rgba, w)
	}
	return shrinkAny(src, w)
}

// shrinkRGBA is shrink reading the pixels' bytes directly: what
// png.Decode gives for the desktop's opaque truecolor screenshots, and 10
// times as fast as a pixel at a time through the interface
// (BenchmarkThumbnail). The same sums, so the same pixels (tested).
func shrinkRGBA(src *image.RGBA, w int) *image.RGBA {
	b := src.Bounds()
	h := max(1, b.Dy()*w/b.Dx())
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		y0, y1 := y*b.Dy()/h, max((y+1)*b.Dy()/h, y*b.Dy()/h+1)
		for x := range w {
			x0, x1 := x*b.Dx()/w, max((x+1)*b.Dx()/w, x*b.Dx()/w+1)
			var r, g, bl, n uint32
			for sy := y0; sy < y1; sy++ {
				row := src.Pix[sy*src.Stride+x0*4 : sy*src.Stride+x1*4]
				for i := 0; i < len(row); i += 4 {
					// As RGBA() widens a byte: v*0x101.
					r, g, bl, n = r+uint32(row[i])*0x101, g+uint32(row[i+1])*0x101, bl+uint32(row[i+2])*0x101, n+1
				}
			}
			o := y*dst.Stride + x*4
			dst.Pix[o], dst.Pix[o+1], dst.Pix[o+2], dst.Pix[o+3] = uint8(r/n>>8), uint8(g/n>>8), uint8(bl/n>>8), 0xff
		}
	}
	return dst
}

// shrinkAny is shrink for any image, a pixel at a time through its
// interface.
func shrinkAny(src image.Image, w int) image.Image {
	b := src.Bounds()
	if b.Dx() <= w {
		return src
	}
	h := max(1, b.Dy()*w/b.Dx())
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		y0, y1 := b.Min.Y+y*b.Dy()/h, b.Min.Y+(y+1)*b.Dy()/h
		for x := range w {
			x0, x1 := b.Min.X+x*b.Dx()/w, b.Min.X+(x+1)*b.Dx()/w
			dst.Set(x, y, average(src, x0, x1, y0, y1))
		}
	}
	return dst
}

func average(src image.Image, x0, x1, y0, y1 int) rgba {
	var r, g, b, n uint32
	for y := y0; y < max(y1, y0+1); y++ {
		for x := x0; x < max(x1, x0+1); x++ {
			cr, cg, cb, _ := src.At(x, y).RGBA()
			r, g, b, n = r+cr, g+cg, b+cb, n+1
		}
	}
	return rgba{uint8(r / n >> 8), uint8(g / n >> 8), uint8(b / n >> 8)}
}

// rgba is an opaque colour.
type rgba struct{ r, g, b uint8 }

func (c rgba) RGBA() (uint32, uint32, uint32, uint32) {
	return uint32(c.r) * 0x101, uint32(c.g) * 0x101, uint32(c.b) * 0x101, 0xffff
}
