package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits on what a client sends (docs/protocol.md, Limits).
const (
	// MaxFrameBytes bounds one incoming message: an LSP body, an NDJSON
	// line, a WebSocket message. The largest legitimate request is a
	// sandbox/files/write of 10 MiB, which base64 makes 13.4 MiB; 16 MiB
	// leaves room for its other members. A larger message is read past
	// without being kept, answered -32600, and the connection goes on.
	MaxFrameBytes = 16 << 20
	// maxHeaderLineBytes bounds one LSP header line. The headers LSP
	// defines take under 60 bytes.
	maxHeaderLineBytes = 4 << 10
	// maxHeaderLines bounds the lines of one LSP header block.
	maxHeaderLines = 32
)

// Framing is how messages are delimited on a byte stream.
type Framing string

const (
	// FramingLSP is the LSP base protocol: Content-Length headers, then the body.
	FramingLSP Framing = "lsp"
	// FramingNDJSON is one JSON value a line.
	FramingNDJSON Framing = "ndjson"
)

// ParseFraming reads a --framing flag value.
func ParseFraming(s string) (Framing, error) {
	switch Framing(s) {
	case FramingLSP, FramingNDJSON:
		return Framing(s), nil
	}
	return "", fmt.Errorf("unknown framing %q: use lsp or ndjson", s)
}

// Framer reads and writes whole message frames: one transport's framing
// (LSP, NDJSON, WebSocket messages). ReadFrame returns a *FrameError for a
// frame it could not take: one it read past (the stream goes on), or, when
// Fatal, one after which it cannot find the next frame. Any other error
// means the stream is over.
type Framer interface {
	ReadFrame() ([]byte, error)
	WriteFrame(msg []byte) error
}

// FrameError is a bad frame: skipped, or the end of the framing when
// Fatal. The stream answers it with Code and Message, id null.
type FrameError struct {
	Code    int64
	Message string
	Fatal   bool
}

// lost is a fatal FrameError: what the client sent next cannot be found.
func lost(code int64, format string, a ...any) *FrameError {
	return &FrameError{Code: code, Message: fmt.Sprintf(format, a...) + "; closing the connection", Fatal: true}
}

func (e *FrameError) Error() string { return e.Message }

// NewFramer returns the framer of f on a byte stream.
func NewFramer(f Framing, r io.Reader, w io.Writer) Framer {
	br := bufio.NewReaderSize(r, 64<<10)
	if f == FramingNDJSON {
		return &ndjsonFramer{r: br, w: w}
	}
	return &lspFramer{r: br, w: w}
}

type lspFramer struct {
	r *bufio.Reader
	w io.Writer
}

// ReadFrame reads a header block, then Content-Length bytes. A body over
// MaxFrameBytes is read past and refused. Only Content-Length frames a
// message, so a header block that does not give one, or that passes the
// limits before its end, leaves no way to find the next message: that is
// a fatal FrameError, and the connection closes (as gopls does for any
// header error) rather than reading bodies as headers.
func (f *lspFramer) ReadFrame() ([]byte, error) {
	length, err := f.readHeader()
	if err != nil {
		return nil, err
	}
	if length > MaxFrameBytes {
		if _, err := io.CopyN(io.Discard, f.r, length); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, &FrameError{Code: CodeInvalidRequest, Message: fmt.Sprintf("message of %d bytes is larger than the limit of %d", length, MaxFrameBytes)}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(f.r, body); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return body, nil
}

// readHeader reads a header block to its empty line and returns its
// Content-Length. Header names are case-insensitive; other headers
// (Content-Type), and lines that are not headers, are ignored.
func (f *lspFramer) readHeader() (int64, error) {
	length := int64(-1)
	for n := 0; ; {
		line, err := f.readHeaderLine(n)
		switch {
		case err != nil:
			return 0, err
		case line == "" && n == 0:
			continue // tolerate blank lines between messages
		case line == "":
			if length < 0 {
				return 0, lost(CodeParseError, "missing Content-Length header")
			}
			return length, nil
		}
		if n++; n > maxHeaderLines {
			return 0, lost(CodeInvalidRequest, "the header block is longer than the limit of %d lines", maxHeaderLines)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil || v < 0 || (length >= 0 && v != length) {
			return 0, lost(CodeParseError, "invalid Content-Length %s", strconv.Quote(truncate(value, 30)))
		}
		length = v
	}
}

// readHeaderLine reads the next header line, the n-th of its block, without
// its line end. A line is never held beyond the reader's buffer: a longer
// one is refused when the buffer fills.
func (f *lspFramer) readHeaderLine(n int) (string, error) {
	line, err := f.r.ReadSlice('\n')
	switch {
	case len(line) > maxHeaderLineBytes || err == bufio.ErrBufferFull:
		return "", lost(CodeInvalidRequest, "a header line is longer than the limit of %d bytes", maxHeaderLineBytes)
	case err == io.EOF && n == 0 && len(bytes.TrimSpace(line)) == 0:
		return "", io.EOF
	case err != nil:
		return "", io.ErrUnexpectedEOF
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

func (f *lspFramer) WriteFrame(msg []byte) error {
	var b bytes.Buffer
	b.Grow(len(msg) + 32)
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(msg))
	b.Write(msg)
	_, err := f.w.Write(b.Bytes())
	return err
}

type ndjsonFramer struct {
	r *bufio.Reader
	w io.Writer
}

// ReadFrame reads the next non-blank line.
func (f *ndjsonFramer) ReadFrame() ([]byte, error) {
	for {
		line, err := f.readLine()
		if err != nil {
			return nil, err
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line, nil
		}
	}
}

func (f *ndjsonFramer) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxFrameBytes {
			for err == bufio.ErrBufferFull { // skip the rest of the line
				_, err = f.r.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, &FrameError{Code: CodeInvalidRequest, Message: fmt.Sprintf("message larger than the limit of %d bytes", MaxFrameBytes)}
		}
		line = appendChunk(line, chunk)
		switch {
		case err == nil:
			return line, nil
		case err == bufio.ErrBufferFull:
			continue
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0:
			return line, nil // a last line without its newline
		default:
			return nil, err
		}
	}
}

// appendChunk appends a line's chunk, doubling the line's capacity (up to
// MaxFrameBytes) as needed: append's growth of large slices by a quarter
// would copy a line up to the limit five times over.
func appendChunk(line, chunk []byte) []byte {
	if need := len(line) + len(chunk); need > cap(line) {
		grown := make([]byte, len(line), min(max(2*cap(line), need), MaxFrameBytes))
		copy(grown, line)
		line = grown
	}
	return append(line, chunk...)
}

// WriteFrame writes msg and its newline at once. The newline goes into
// msg's spare capacity when it has some (a frame is the outbox's alone, and
// a reply's leaves a byte for it), else into a copy.
func (f *ndjsonFramer) WriteFrame(msg []byte) error {
	b := msg
	if cap(b) == len(b) {
		b = make([]byte, len(msg), len(msg)+1)
		copy(b, msg)
	}
	_, err := f.w.Write(append(b, '\n'))
	return err
}
