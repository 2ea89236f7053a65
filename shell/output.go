package shell

import (
	"bytes"
	"unicode/utf8"
)

// Collector keeps the first max bytes of one output stream and, when
// emit is set, passes the same bytes on as they come, as text: a
// character split between two writes waits for its end, and bytes that
// are not UTF-8 become U+FFFD. What passes the cap is counted, not kept
// or passed on.
type Collector struct {
	max  int
	emit func(text string)

	buf       []byte
	carry     []byte // the start of a character whose end has not come
	truncated bool
}

// NewCollector returns a collector keeping max bytes (all when max is 0)
// and passing them on to emit (when not nil).
func NewCollector(max int, emit func(text string)) *Collector {
	return &Collector{max: max, emit: emit}
}

func (c *Collector) Write(p []byte) (int, error) {
	keep := p
	if c.max > 0 && len(c.buf)+len(keep) > c.max {
		keep = keep[:max(c.max-len(c.buf), 0)]
		c.truncated = true
	}
	c.buf = append(c.buf, keep...)
	if c.emit != nil && len(keep) > 0 {
		data := append(c.carry, keep...)
		cut := completeRunes(data)
		c.carry = append([]byte(nil), data[cut:]...)
		if cut > 0 {
			c.emit(validText(data[:cut]))
		}
	}
	return len(p), nil
}

// Close passes on a character left unfinished at the end of the output.
func (c *Collector) Close() {
	if c.emit != nil && len(c.carry) > 0 {
		c.emit(validText(c.carry))
		c.carry = nil
	}
}

// Bytes is the output kept.
func (c *Collector) Bytes() []byte { return c.buf }

// Truncated says whether output passed the cap.
func (c *Collector) Truncated() bool { return c.truncated }

// completeRunes is the length of data without an unfinished character at
// its end (one that more bytes could still complete).
func completeRunes(data []byte) int {
	// A character is at most utf8.UTFMax bytes: look back that far for the
	// start of the last one.
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(data[i]) {
			continue
		}
		if !utf8.FullRune(data[i:]) {
			return i
		}
		break
	}
	return len(data)
}

// validText is data as text, with U+FFFD for what is not UTF-8.
func validText(data []byte) string {
	return string(bytes.ToValidUTF8(data, []byte("\uFFFD")))
}
