package wire

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestLSPFrames(t *testing.T) {
	block32 := "Content-Length: 2\r\n" + strings.Repeat("X-Pad: y\r\n", maxHeaderLines-1) + "\r\n{}"
	longest := "X-Pad: " + strings.Repeat("y", maxHeaderLineBytes-len("X-Pad: \r\n")) + "\r\nContent-Length: 2\r\n\r\n{}"
	input := "Content-Length: 2\r\n\r\n{}" +
		"\r\n" + // a stray blank line between messages is tolerated
		"content-length: 7\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1,2,3]" +
		"garbage line\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n1" +
		block32 + longest
	f := NewFramer(FramingLSP, strings.NewReader(input), io.Discard)
	for i, want := range []string{"{}", "[1,2,3]", "1", "{}", "{}"} {
		if frame, err := f.ReadFrame(); err != nil || string(frame) != want {
			t.Errorf("frame %d = %q, %v; want %q", i, frame, err, want)
		}
	}
	if _, err := f.ReadFrame(); err != io.EOF {
		t.Errorf("at the end: %v, want EOF", err)
	}
}

// TestLSPHeaderBlocksThatLoseTheFraming: a header block that gives no
// usable Content-Length, or that passes the limits before its end, leaves
// the reader nowhere to find the next message. It is a fatal FrameError,
// never a frame read from the wrong place (issue 13: a block of 40 lines
// was cut at 33 and its rest read as the body).
func TestLSPHeaderBlocksThatLoseTheFraming(t *testing.T) {
	next := "Content-Length: 2\r\n\r\n{}"
	for _, tc := range []struct {
		name, input string
		code        int64
		says        string
	}{
		{"no Content-Length", "Content-Type: x\r\n\r\n" + next, CodeParseError, "missing Content-Length"},
		{"a Content-Length that is no number", "Content-Length: twelve\r\n\r\n" + next, CodeParseError, `invalid Content-Length " twelve"`},
		{"a negative Content-Length", "Content-Length: -5\r\n\r\n" + next, CodeParseError, "invalid Content-Length"},
		{"two Content-Lengths that differ", "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}" + next, CodeParseError, `invalid Content-Length " 3"`},
		{"a block of 40 lines", "Content-Length: 2\r\n" + strings.Repeat("X-Pad: y\r\n", 39) + "\r\n{}" + next,
			CodeInvalidRequest, "longer than the limit of 32 lines"},
		{"a header line one byte too long", "X-Pad: " + strings.Repeat("y", maxHeaderLineBytes-len("X-Pad: \r\n")+1) + "\r\n" + next,
			CodeInvalidRequest, "longer than the limit of 4096 bytes"},
		{"a header line longer than the reader's buffer", strings.Repeat("y", 100<<10) + "\r\n" + next,
			CodeInvalidRequest, "longer than the limit of 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFramer(FramingLSP, strings.NewReader(tc.input), io.Discard)
			frame, err := f.ReadFrame()
			var fe *FrameError
			if !errors.As(err, &fe) || !fe.Fatal || fe.Code != tc.code || !strings.Contains(fe.Message, tc.says) {
				t.Fatalf("ReadFrame = %q, %v; want a fatal error %d saying %q", frame, err, tc.code, tc.says)
			}
			if !strings.HasSuffix(fe.Message, "; closing the connection") {
				t.Errorf("the message does not say the connection closes: %q", fe.Message)
			}
		})
	}
}

// TestLongHeaderLineIsNotHeld: a header line of 64 MiB is refused after
// the reader's buffer, not read to its end (a 640 MB one took 1.3 GB).
func TestLongHeaderLineIsNotHeld(t *testing.T) {
	input := &countingReader{r: io.MultiReader(strings.NewReader("X-Pad: "), repeat('a', 64<<20), strings.NewReader("\r\n\r\n"))}
	var fe *FrameError
	if _, err := NewFramer(FramingLSP, input, io.Discard).ReadFrame(); !errors.As(err, &fe) || !fe.Fatal {
		t.Fatalf("err = %v, want a fatal FrameError", err)
	}
	if input.n > 128<<10 {
		t.Errorf("read %d bytes of the line before refusing it", input.n)
	}
}

func TestLSPFrameTruncatedBodyEndsTheStream(t *testing.T) {
	f := NewFramer(FramingLSP, strings.NewReader("Content-Length: 10\r\n\r\n{}"), io.Discard)
	if _, err := f.ReadFrame(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v", err)
	}
}

// TestOversizedFramesAreSkipped: a message over MaxFrameBytes is read past
// and refused, saying the limit, and the next one is read. An LSP body is
// never held; an NDJSON line is held up to the limit, since its end is
// where it ends.
func TestOversizedFramesAreSkipped(t *testing.T) {
	const size = 64 << 20
	for _, tc := range []struct {
		framing  Framing
		input    io.Reader
		maxAlloc uint64
	}{
		{FramingLSP, io.MultiReader(strings.NewReader("Content-Length: "+strconv.Itoa(size)+"\r\n\r\n"), repeat('x', size), strings.NewReader("Content-Length: 2\r\n\r\n{}")), 1 << 20},
		{FramingNDJSON, io.MultiReader(repeat('x', size), strings.NewReader("\n{}\n")), 3 * MaxFrameBytes},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f := NewFramer(tc.framing, tc.input, io.Discard)
		var fe *FrameError
		if _, err := f.ReadFrame(); !errors.As(err, &fe) || fe.Code != CodeInvalidRequest || fe.Fatal || !strings.Contains(fe.Message, "limit of 16777216") {
			t.Errorf("%s: oversized frame: %v", tc.framing, err)
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > tc.maxAlloc {
			t.Errorf("%s: skipping a frame of %d bytes allocated %d bytes", tc.framing, size, alloc)
		}
		if frame, err := f.ReadFrame(); err != nil || string(frame) != "{}" {
			t.Errorf("%s: frame after the oversized one = %q, %v", tc.framing, frame, err)
		}
	}
}

// repeat is n bytes of b, made as they are read.
func repeat(b byte, n int) io.Reader {
	return io.LimitReader(byteReader(b), int64(n))
}

type byteReader byte

func (b byteReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestNDJSONFrames(t *testing.T) {
	f := NewFramer(FramingNDJSON, strings.NewReader("{}\n\n  \r\n{\"a\":1}\r\n[1]"), io.Discard)
	for _, want := range []string{"{}", `{"a":1}`, "[1]"} {
		if frame, err := f.ReadFrame(); err != nil || string(frame) != want {
			t.Errorf("frame = %q, %v; want %q", frame, err, want)
		}
	}
	if _, err := f.ReadFrame(); err != io.EOF {
		t.Errorf("at the end: %v", err)
	}
}

func TestWriteFrames(t *testing.T) {
	var lsp, nd bytes.Buffer
	NewFramer(FramingLSP, nil, &lsp).WriteFrame([]byte(`{"a":"é"}`))
	NewFramer(FramingNDJSON, nil, &nd).WriteFrame([]byte(`{"a":"é"}`))
	if lsp.String() != "Content-Length: 10\r\n\r\n{\"a\":\"é\"}" {
		t.Errorf("lsp = %q", lsp.String())
	}
	if nd.String() != "{\"a\":\"é\"}\n" {
		t.Errorf("ndjson = %q", nd.String())
	}
}
