package desktop

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/internal/pngtest"
)

// The sandbox can write into the agent's output (/proc/<pid>/fd/1 of a
// process of its own user): every line the sidecar reads from it is bounded
// by the answer it waits for, and a longer one closes the agent unread.

// dialPipe starts an agent on a pipe session, the test playing the agent.
func dialPipe(t *testing.T) (*Agent, *pipeSession) {
	t.Helper()
	s := newPipeSession()
	dialed := make(chan *Agent, 1)
	go func() {
		a, err := Dial(context.Background(), s)
		if err != nil {
			t.Error(err)
		}
		dialed <- a
	}()
	s.answer(t, `{"id":1}`)
	a := <-dialed
	if a == nil {
		t.FailNow()
	}
	t.Cleanup(func() { a.Close(); s.answers.Close() })
	return a, s
}

// flood writes n bytes of one endless line into the agent's output, as
// fast as the sidecar reads them, and says how many it took.
func flood(s *pipeSession, n int) <-chan int {
	took := make(chan int, 1)
	go func() {
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		total := 0
		for total < n {
			w, err := s.answers.Write(chunk)
			total += w
			if err != nil {
				break
			}
		}
		took <- total
	}()
	return took
}

// issue 16: a 200 MiB line written into the agent's output took the
// sidecar to 895 MB.
func TestAnUnaskedLongLineClosesTheAgent(t *testing.T) {
	a, s := dialPipe(t)
	const sent = 32 << 20
	took := flood(s, sent)
	select {
	case <-a.done:
	case n := <-took:
		t.Fatalf("the sidecar read all %d MiB of one line", n>>20)
	}
	s.answers.CloseWithError(errors.New("test over")) // ends the flood
	if n := <-took; n > maxAnswer+(128<<10) {
		t.Errorf("the sidecar read %d KiB of the line, more than its bound of %d KiB", n>>10, maxAnswer>>10)
	}
	if a.Alive() {
		t.Error("the agent is still alive after an overlong line")
	}
	err := New(fixedConn{a}, DefaultDisplay).Move(context.Background(), 1, 2)
	if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "1.0 MiB") {
		t.Errorf("the next request: %v, want ErrTooLong naming the bound", err)
	}
}

// answerWith plays the agent for one request: it reads the request and
// answers with the line made of its id.
func answerWith(t *testing.T, s *pipeSession, line func(id int64) []byte) {
	t.Helper()
	go func() {
		var req request
		buf := make([]byte, 64<<10)
		n, err := s.requests.Read(buf)
		if err != nil || json.Unmarshal(buf[:n], &req) != nil {
			t.Errorf("request %q: %v", buf[:n], err)
			return
		}
		s.answers.Write(append(line(req.ID), '\n'))
	}()
}

// screenshotLine answers as the agent does: the PNG as a frame, then the
// line (answerWith ends it).
func screenshotLine(pngData []byte) func(int64) []byte {
	return func(id int64) []byte {
		frame := []byte("=" + strconv.Itoa(len(pngData)) + "\n")
		return append(append(frame, pngData...), `{"id":`+itoa(id)+`}`...)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// noise is the least compressible screenshot of a display: random RGBA
// pixels, stored without compression.
func noise(t *testing.T, d Display) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, d.Width, d.Height))
	for i := range img.Pix {
		img.Pix[i] = byte(rand.Uint32())
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&out, img); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestAnswerBoundsFollowTheRequest(t *testing.T) {
	small := Display{Width: 320, Height: 240}
	for _, tc := range []struct {
		name    string
		call    func(d *Desktop) error
		answer  func(int64) []byte
		tooLong bool
	}{
		{"the largest screenshot of the display", func(d *Desktop) error { _, err := d.Screenshot(context.Background()); return err },
			screenshotLine(noise(t, small)), false},
		{"a screenshot larger than the display's", func(d *Desktop) error { _, err := d.Screenshot(context.Background()); return err },
			screenshotLine(noise(t, Display{Width: 640, Height: 480})), true},
		{"a click answered with megabytes", func(d *Desktop) error { return d.Click(context.Background(), 1, 1, 1, 1) },
			func(id int64) []byte {
				return []byte(`{"id":` + itoa(id) + `,"text":"` + strings.Repeat("a", 2<<20) + `"}`)
			}, true},
		{"a click answered with a frame of megabytes", func(d *Desktop) error { return d.Click(context.Background(), 1, 1, 1, 1) },
			screenshotLine(bytes.Repeat([]byte("a"), 2<<20)), true},
		{"a frame claiming more than it sends", func(d *Desktop) error { return d.Click(context.Background(), 1, 1, 1, 1) },
			func(id int64) []byte { return []byte("=9999999999\n") }, true},
		{"a clipboard of a few megabytes", func(d *Desktop) error { _, _, err := d.Clipboard(context.Background()); return err },
			func(id int64) []byte {
				return []byte(`{"id":` + itoa(id) + `,"text":"` + strings.Repeat("a", 4<<20) + `"}`)
			}, false},
		{"a clipboard beyond its bound", func(d *Desktop) error { _, _, err := d.Clipboard(context.Background()); return err },
			func(id int64) []byte {
				return []byte(`{"id":` + itoa(id) + `,"text":"` + strings.Repeat("a", maxClipboardAnswer) + `"}`)
			}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, s := dialPipe(t)
			answerWith(t, s, tc.answer)
			err := tc.call(New(fixedConn{a}, small))
			switch {
			case tc.tooLong && !errors.Is(err, ErrTooLong):
				t.Errorf("err = %v, want ErrTooLong", err)
			case !tc.tooLong && err != nil:
				t.Errorf("err = %v", err)
			case tc.tooLong && a.Alive():
				t.Error("the agent lives on after an overlong answer")
			}
		})
	}
}

// forgedPNG is a small, valid PNG that claims a huge size: one bit per
// pixel, every row zero, compressed as hard as zlib can. Decoding it takes
// width*height bytes.
func forgedPNG(t *testing.T, width, height int) []byte {
	t.Helper()
	var idat bytes.Buffer
	z, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, 1+(width+7)/8)
	for range height {
		z.Write(row)
	}
	z.Close()
	return pngtest.File(width, height, 1, 0, idat.Bytes()) // 1 bit, greyscale
}

// issue 16: a forged 1 MB PNG claiming 16000x16000 was taken for a
// screenshot and decoded (5.6 s, 1.8 GB). Its size is checked against the
// display's before anything decodes it.
func TestAScreenshotNotOfTheDisplayIsRefused(t *testing.T) {
	forged := forgedPNG(t, 16000, 16000)
	if cfg, err := png.DecodeConfig(bytes.NewReader(forged)); err != nil || cfg.Width != 16000 {
		t.Fatalf("the forged PNG: %v, %v", cfg, err)
	}
	t.Logf("a %d KiB PNG that claims 16000x16000", len(forged)>>10)
	for _, shot := range [][]byte{forged, forgedPNG(t, 1280, 801), forgedPNG(t, 1, 1)} {
		a, s := dialPipe(t)
		answerWith(t, s, screenshotLine(shot))
		got, err := New(fixedConn{a}, DefaultDisplay).Screenshot(context.Background())
		if !errors.Is(err, ErrBadScreenshot) || !strings.Contains(err.Error(), "1280x800") {
			t.Errorf("Screenshot = %dx%d, %v; want ErrBadScreenshot naming the display", got.Width, got.Height, err)
		}
	}
	a, s := dialPipe(t)
	answerWith(t, s, screenshotLine(forgedPNG(t, 1280, 800)))
	if got, err := New(fixedConn{a}, DefaultDisplay).Screenshot(context.Background()); err != nil || got.Width != 1280 || got.Height != 800 {
		t.Errorf("a screenshot of the display: %dx%d, %v", got.Width, got.Height, err)
	}
}

func TestFrameSize(t *testing.T) {
	for line, want := range map[string]int64{"=0": 0, "=5": 5, "=1234567890": 1234567890} {
		if n, ok := frameSize([]byte(line)); !ok || n != want {
			t.Errorf("frameSize(%q) = %d, %v; want %d", line, n, ok, want)
		}
	}
	for _, line := range []string{"", "=", "=-1", "=+1", "=12a", "= 1", "=12345678901", `{"id":1}`, "5"} {
		if n, ok := frameSize([]byte(line)); ok {
			t.Errorf("frameSize(%q) = %d: a frame", line, n)
		}
	}
}
