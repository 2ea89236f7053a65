package tools

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// picture decodes a screenshot result's image, checking its MIME type.
func pictureOf(t *testing.T, res Result, mime string) image.Image {
	t.Helper()
	if res.IsError || len(res.Content) != 2 || res.Content[0].Type != "image" || res.Content[0].MimeType != mime {
		t.Fatalf("want an image/%s and a text: %+v", mime, textOf(res))
	}
	data := res.Content[0].Data
	decode := png.Decode
	if mime == "image/jpeg" {
		decode = jpeg.Decode
	}
	img, err := decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", mime, err)
	}
	return img
}

func TestScreenshotFormats(t *testing.T) {
	for _, tc := range []struct {
		display desktop.Display
		args    string
		mime    string
		size    image.Point
	}{
		{desktop.DefaultDisplay, `{}`, "image/png", image.Pt(1280, 800)},
		{desktop.DefaultDisplay, `{"format": "png"}`, "image/png", image.Pt(1280, 800)},
		{desktop.DefaultDisplay, `{"format": "jpeg"}`, "image/jpeg", image.Pt(1280, 800)},
		{desktop.DefaultDisplay, `{"format": "jpeg", "quality": 30}`, "image/jpeg", image.Pt(1280, 800)},
		{desktop.Display{Width: 1920, Height: 1080}, `{"format": "jpeg"}`, "image/jpeg", image.Pt(1456, 819)},
	} {
		sb := &fakeSandbox{display: tc.display}
		img := pictureOf(t, call(t, sb, "sandbox_screenshot", tc.args), tc.mime)
		if img.Bounds().Size() != tc.size {
			t.Errorf("%v %s: %v, want %v", tc.display, tc.args, img.Bounds().Size(), tc.size)
		}
	}
}

func TestJPEGQualityTradesBytes(t *testing.T) {
	size := func(args string) int {
		res := call(t, &fakeSandbox{display: desktop.DefaultDisplay}, "sandbox_screenshot", args)
		return len(res.Content[0].Data)
	}
	low, def, high := size(`{"format": "jpeg", "quality": 10}`), size(`{"format": "jpeg"}`), size(`{"format": "jpeg", "quality": 95}`)
	if !(low < def && def < high) {
		t.Errorf("JPEG sizes at quality 10, 75 (default), 95: %d, %d, %d", low, def, high)
	}
}

func TestZoomShowsFullResolution(t *testing.T) {
	for _, tc := range []struct {
		name    string
		display desktop.Display
		args    string
		grabbed image.Rectangle // display pixels asked of the desktop
		size    image.Point
		note    string
	}{
		{"unscaled display", desktop.DefaultDisplay, `{"region": [10, 20, 110, 70]}`,
			image.Rect(10, 20, 110, 70), image.Pt(100, 50),
			"this 100x50 image shows it at 1 times the screenshot's size. Its point (u, v) is the screenshot point (10 + u, 20 + v)"},
		{"scaled display", desktop.Display{Width: 2560, Height: 1600}, `{"region": [100, 50, 200, 100]}`,
			image.Rect(184, 92, 369, 185), image.Pt(185, 93),
			"this 185x93 image shows it at 1.843 times the screenshot's size. Its point (u, v) is the screenshot point (99.83 + u × 0.5426, 49.91 + v × 0.5425)"},
		{"a region past the API's limits is fitted to them", desktop.Display{Width: 3840, Height: 2160}, `{"region": [0, 0, 1456, 819], "format": "jpeg"}`,
			image.Rect(0, 0, 3840, 2160), image.Pt(1456, 819),
			"at 1 times the screenshot's size. Its point (u, v) is the screenshot point (0 + u, 0 + v)"},
	} {
		sb := &fakeSandbox{display: tc.display}
		res := call(t, sb, "sandbox_screenshot", tc.args)
		mime := "image/png"
		if strings.Contains(tc.args, "jpeg") {
			mime = "image/jpeg"
		}
		img := pictureOf(t, res, mime)
		if got := strings.Join(sb.calls, "|"); got != "screenshot "+tc.grabbed.String() {
			t.Errorf("%s: asked the desktop for %q, want %v", tc.name, got, tc.grabbed)
		}
		if img.Bounds().Size() != tc.size || !strings.Contains(textOf(res), tc.note) {
			t.Errorf("%s: %v %q\n  want %v and %q", tc.name, img.Bounds().Size(), textOf(res), tc.size, tc.note)
		}
		// Unscaled, each pixel is the display's: red and green are its x and
		// y (modulo 256) in the fake.
		if img.Bounds().Size() == tc.grabbed.Size() {
			for _, p := range []image.Point{{0, 0}, {tc.size.X - 1, tc.size.Y - 1}, {tc.size.X / 2, 3}} {
				r, g, _, _ := img.At(p.X, p.Y).RGBA()
				want := tc.grabbed.Min.Add(p)
				if d := int(r>>8) - want.X%256; mime == "image/png" && (d != 0 || int(g>>8) != want.Y%256) {
					t.Errorf("%s: pixel %v is (%d, %d), want display pixel %v", tc.name, p, r>>8, g>>8, want)
				}
			}
		}
	}
}

// TestImageDataIsBase64InJSON holds an image's content to the JSON it had
// when its data was a base64 string: the bytes now held as they are must
// reach the wire the same.
func TestImageDataIsBase64InJSON(t *testing.T) {
	type before struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		Data     string `json:"data,omitempty"`
		MimeType string `json:"mimeType,omitempty"`
	}
	for _, data := range [][]byte{nil, {}, {0}, {0xff, 0xfe}, []byte("\x89PNG\r\n\x1a\n<>&+/")} {
		got, _ := json.Marshal(Content{Type: "image", Data: data, MimeType: "image/png"})
		want, _ := json.Marshal(before{Type: "image", Data: base64.StdEncoding.EncodeToString(data), MimeType: "image/png"})
		if string(got) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", data, got, want)
		}
	}
}
