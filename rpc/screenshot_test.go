package rpc

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// shotService answers screenshots with a real 64x48 PNG.
type shotService struct{ *fakeService }

func (shotService) Screenshot(ctx context.Context, path string) (desktop.Screenshot, error) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range img.Pix {
		img.Pix[i] = byte(i)
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return desktop.Screenshot{PNG: b.Bytes(), Width: 64, Height: 48}, nil
}

func TestScreenshotFormats(t *testing.T) {
	s := newTestServer(shotService{newFakeService()}, Info{}, zerolog.Nop())
	m := s.methods["sandbox/screenshot"]
	for _, tc := range []struct {
		params, mime, field string
	}{
		{`{"projectPath": "/p"}`, "image/png", ""},
		{`{"projectPath": "/p", "format": "png"}`, "image/png", ""},
		{`{"projectPath": "/p", "format": "jpeg"}`, "image/jpeg", ""},
		{`{"projectPath": "/p", "format": "jpeg", "quality": 20}`, "image/jpeg", ""},
		{`{"projectPath": "/p", "format": "gif"}`, "", "format"},
		{`{"projectPath": "/p", "quality": 20}`, "", "quality"},
		{`{"projectPath": "/p", "format": "jpeg", "quality": 0}`, "", "quality"},
		{`{"projectPath": "/p", "format": "jpeg", "quality": 101}`, "", "quality"},
	} {
		p, err := m.decode([]byte(tc.params))
		var res any
		if err == nil {
			res, err = m.run(context.Background(), &session{}, p)
		}
		if tc.field != "" || err != nil {
			if got := fieldOf(t, err); got != tc.field {
				t.Errorf("%s: %v, want invalid params naming %q", tc.params, err, tc.field)
			}
			continue
		}
		shot := res.(screenshotResult)
		data := shot.Data
		decode := map[string]func([]byte) (image.Config, error){
			"image/png":  func(b []byte) (image.Config, error) { return png.DecodeConfig(bytes.NewReader(b)) },
			"image/jpeg": func(b []byte) (image.Config, error) { return jpeg.DecodeConfig(bytes.NewReader(b)) },
		}[tc.mime]
		cfg, err := decode(data)
		if shot.MimeType != tc.mime || err != nil || cfg.Width != 64 || cfg.Height != 48 || shot.Width != 64 || shot.Height != 48 {
			t.Errorf("%s: %s %dx%d (%v), result %dx%d", tc.params, shot.MimeType, cfg.Width, cfg.Height, err, shot.Width, shot.Height)
		}
	}
}
