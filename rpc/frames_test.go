package rpc

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

func TestLSPFrames(t *testing.T) {
	input := "Content-Length: 2\r\n\r\n{}" +
		"\r\n" + // a stray blank line between messages is tolerated
		"content-length: 7\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1,2,3]" +
		"Content-Type: x\r\n\r\n" + // no length
		"Content-Length: abc\r\n\r\n" +
		"garbage line\r\nContent-Length: 1\r\n\r\n1"
	f := newFramer(FramingLSP, strings.NewReader(input), io.Discard)
	want := []string{"{}", "[1,2,3]", "!missing Content-Length", "!invalid Content-Length", "1"}
	for i, w := range want {
		frame, err := f.ReadFrame()
		var fe *frameError
		switch {
		case strings.HasPrefix(w, "!"):
			if !errors.As(err, &fe) || !strings.Contains(fe.message, w[1:]) {
				t.Errorf("frame %d: err = %v, want %s", i, err, w[1:])
			}
		case err != nil || string(frame) != w:
			t.Errorf("frame %d = %q, %v; want %q", i, frame, err, w)
		}
	}
	if _, err := f.ReadFrame(); err != io.EOF {
		t.Errorf("at the end: %v, want EOF", err)
	}
}

func TestLSPFrameTruncatedBodyEndsTheStream(t *testing.T) {
	f := newFramer(FramingLSP, strings.NewReader("Content-Length: 10\r\n\r\n{}"), io.Discard)
	if _, err := f.ReadFrame(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v", err)
	}
}

func TestOversizedFramesAreSkipped(t *testing.T) {
	big := strings.Repeat("x", MaxFrameBytes+1)
	for _, tc := range []struct {
		framing Framing
		input   string
	}{
		{FramingLSP, "Content-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big + "Content-Length: 2\r\n\r\n{}"},
		{FramingNDJSON, big + "\n{}\n"},
	} {
		f := newFramer(tc.framing, strings.NewReader(tc.input), io.Discard)
		var fe *frameError
		if _, err := f.ReadFrame(); !errors.As(err, &fe) || fe.code != codeInvalidRequest {
			t.Errorf("%s: oversized frame: %v", tc.framing, err)
		}
		if frame, err := f.ReadFrame(); err != nil || string(frame) != "{}" {
			t.Errorf("%s: frame after the oversized one = %q, %v", tc.framing, frame, err)
		}
	}
}

func TestNDJSONFrames(t *testing.T) {
	f := newFramer(FramingNDJSON, strings.NewReader("{}\n\n  \r\n{\"a\":1}\r\n[1]"), io.Discard)
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
	newFramer(FramingLSP, nil, &lsp).WriteFrame([]byte(`{"a":"é"}`))
	newFramer(FramingNDJSON, nil, &nd).WriteFrame([]byte(`{"a":"é"}`))
	if lsp.String() != "Content-Length: 10\r\n\r\n{\"a\":\"é\"}" {
		t.Errorf("lsp = %q", lsp.String())
	}
	if nd.String() != "{\"a\":\"é\"}\n" {
		t.Errorf("ndjson = %q", nd.String())
	}
}
