package desktop

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

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
