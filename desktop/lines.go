package desktop

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// answer is one answer of the agent: its JSON line, and the bytes of the
// frame that came before it, if one did.
type answer struct {
	line  []byte
	frame []byte
}

// readAnswer reads one answer: a JSON line, or a frame (a line "=N", then
// N bytes: a screenshot's PNG, which as JSON would be base64 to encode,
// scan and decode) and the JSON line after it. The frame and the line are
// each at most limit bytes, as limit is while they are read.
func readAnswer(r *bufio.Reader, limit *atomic.Int64) (answer, error) {
	line, err := readLine(r, limit)
	if err != nil {
		return answer{}, err
	}
	n, ok := frameSize(line)
	if !ok {
		return answer{line: line}, nil
	}
	if max := limit.Load(); n > max {
		return answer{}, fmt.Errorf("%w: a frame of %s, more than %s", ErrTooLong, sizeOf(n), sizeOf(max))
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		return answer{}, err
	}
	line, err = readLine(r, limit)
	return answer{line: line, frame: frame}, err
}

// frameSize is the size a frame's line "=N" gives; a JSON line never
// starts with "=".
func frameSize(line []byte) (int64, bool) {
	digits, ok := bytes.CutPrefix(line, []byte("="))
	if !ok || len(digits) == 0 || len(digits) > 10 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// readLine reads one line (without its newline) of at most limit bytes, as
// limit is while it reads. A longer line is ErrTooLong, and is read no
// further than the bound: its bytes are never all held.
func readLine(r *bufio.Reader, limit *atomic.Int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		body := len(line) + len(chunk)
		if err == nil {
			body-- // the newline
		}
		if max := limit.Load(); int64(body) > max {
			return nil, fmt.Errorf("%w: more than %s", ErrTooLong, sizeOf(max))
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil // the last line, unended
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

// sizeOf is how a message puts a size: "1.0 MiB".
func sizeOf(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
