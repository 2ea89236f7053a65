package rpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxFrameBytes bounds one incoming message. A larger one is read past and
// refused, and the connection goes on.
const MaxFrameBytes = 32 << 20

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

// framer reads and writes whole message frames. ReadFrame returns a
// frameError for a frame it could read past (the stream goes on), and any
// other error when the stream is over.
type framer interface {
	ReadFrame() ([]byte, error)
	WriteFrame(msg []byte) error
}

// frameError is a bad frame the reader skipped.
type frameError struct {
	code    int64
	message string
}

func (e *frameError) Error() string { return e.message }

func newFramer(f Framing, r io.Reader, w io.Writer) framer {
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

// ReadFrame reads headers up to the empty line, then Content-Length bytes.
// Header names are case-insensitive; headers other than Content-Length
// (Content-Type) are ignored.
func (f *lspFramer) ReadFrame() ([]byte, error) {
	length := -1
	var bad string
	for n := 0; ; {
		line, err := f.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && n == 0 && strings.TrimSpace(line) == "" {
				return nil, io.EOF
			}
			return nil, io.ErrUnexpectedEOF
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if n == 0 {
				continue // tolerate blank lines between messages
			}
			break
		}
		n++
		name, value, ok := strings.Cut(line, ":")
		switch {
		case !ok:
			bad = "malformed header line " + strconv.Quote(truncate(line, 60))
		case strings.EqualFold(strings.TrimSpace(name), "Content-Length"):
			v, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || v < 0 {
				bad = "invalid Content-Length " + strconv.Quote(truncate(value, 30))
			} else {
				length = v
			}
		}
		if n > 32 {
			bad = "too many header lines"
			break
		}
	}
	switch {
	case bad != "" && length < 0:
		return nil, &frameError{code: codeParseError, message: bad}
	case length < 0:
		return nil, &frameError{code: codeParseError, message: "missing Content-Length header"}
	case length > MaxFrameBytes:
		if _, err := io.CopyN(io.Discard, f.r, int64(length)); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, &frameError{code: codeInvalidRequest, message: fmt.Sprintf("message of %d bytes is larger than the limit of %d", length, MaxFrameBytes)}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(f.r, body); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return body, nil
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
			return nil, &frameError{code: codeInvalidRequest, message: fmt.Sprintf("message larger than the limit of %d bytes", MaxFrameBytes)}
		}
		line = append(line, chunk...)
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

func (f *ndjsonFramer) WriteFrame(msg []byte) error {
	b := make([]byte, 0, len(msg)+1)
	b = append(append(b, msg...), '\n')
	_, err := f.w.Write(b)
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
