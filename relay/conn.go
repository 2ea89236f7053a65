// Package relay is the sidecar's end of the relays it runs in a sandbox
// (resources/relay/pilot_relay.py): the frames a connection travels in
// over a relay's attached exec, that exec as a net.Conn, a pool of relays
// started ahead of their connections, and the one pump between two
// connections. It knows nothing of Docker or of sandboxes: the caller
// starts the execs.
package relay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Session is an attached exec's stream to a relay: its stdin and stdout,
// and what it wrote to stderr so far. service.ExecSession is one.
type Session interface {
	io.ReadWriteCloser
	Stderr() string
}

// Frames between the sidecar and a relay: a 4-byte big-endian length,
// then that many bytes; a frame of length 0 ends that side's output (a
// half-close). A stream's own end cannot say it: the engine ends an
// exec's whole stream with its stdout, and may cut the last bytes of a
// stdin it closes (Docker 20.10 dropped the last 26 KiB of 3 MiB, seen in
// the forward test).
const (
	// Chunk is the most the sidecar puts in a frame, and what the relay
	// reads from its socket at a time (pilot_relay.py's CHUNK).
	Chunk = 256 << 10
	// maxFrame bounds a frame from a relay (pilot_relay.py's MAX_FRAME).
	maxFrame = 1 << 20
	// readBuffer is what a connection reads from its stream at a time.
	readBuffer = 64 << 10
)

// ErrFrame is a frame no relay writes.
var ErrFrame = errors.New("a bad frame from the relay")

var endFrame = []byte{0, 0, 0, 0}

// Conn is one connection a relay carries, as frames over its session.
// One goroutine may read while another writes; CloseWrite passes the end
// of the sidecar's output on, and Close ends the relay.
type Conn struct {
	s Session
	r *bufio.Reader

	// The reading side's: bytes of the current frame not read yet, and
	// whether the relay's end frame came.
	left  int
	ended bool

	wbuf []byte // the writing side's frame: a header, then up to Chunk bytes
}

var _ net.Conn = (*Conn)(nil)

// NewConn returns the connection s carries.
func NewConn(s Session) *Conn {
	return &Conn{s: s, r: bufio.NewReaderSize(s, readBuffer)}
}

// next reads frame headers until one with bytes, and returns false at the
// end frame.
func (c *Conn) next() (bool, error) {
	for c.left == 0 {
		if c.ended {
			return false, nil
		}
		var head [4]byte
		if _, err := io.ReadFull(c.r, head[:]); err != nil {
			return false, streamEnded(err)
		}
		n := binary.BigEndian.Uint32(head[:])
		switch {
		case n == 0:
			c.ended = true
		case n > maxFrame:
			return false, fmt.Errorf("%w: %d bytes", ErrFrame, n)
		default:
			c.left = int(n)
		}
	}
	return true, nil
}

// streamEnded is err, an end of the stream in the middle of the relay's
// output: never io.EOF, which would read as the relay's end frame.
func streamEnded(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("relay stream: %w", err)
}

// Read reads what the relay carries from the sandbox; io.EOF once the
// relay's end frame came.
func (c *Conn) Read(p []byte) (int, error) {
	more, err := c.next()
	if !more {
		if err == nil {
			err = io.EOF
		}
		return 0, err
	}
	n, err := c.r.Read(p[:min(len(p), c.left)])
	c.left -= n
	if err != nil {
		err = streamEnded(err)
	}
	return n, err
}

// WriteTo copies what the relay carries from the sandbox to w, frame by
// frame, until its end frame (then nil).
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		more, err := c.next()
		if !more {
			return total, err
		}
		n, err := io.CopyN(w, c.r, int64(c.left))
		total += n
		c.left -= int(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = streamEnded(err)
			}
			return total, err
		}
	}
}

// Write sends p to the sandbox, in frames of at most Chunk bytes.
func (c *Conn) Write(p []byte) (int, error) {
	c.buffer()
	written := 0
	for len(p) > 0 {
		n := copy(c.wbuf[4:], p)
		if err := c.send(n); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// ReadFrom sends what r reads to the sandbox, a read a frame, until r
// ends; it does not end the sidecar's output (CloseWrite does).
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	c.buffer()
	var total int64
	for {
		n, err := r.Read(c.wbuf[4:])
		if n > 0 {
			if werr := c.send(n); werr != nil {
				return total, werr
			}
			total += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (c *Conn) buffer() {
	if c.wbuf == nil {
		c.wbuf = make([]byte, 4+Chunk)
	}
}

// send writes the frame of the first n bytes after wbuf's header.
func (c *Conn) send(n int) error {
	binary.BigEndian.PutUint32(c.wbuf, uint32(n))
	_, err := c.s.Write(c.wbuf[:4+n])
	return err
}

// CloseWrite ends the sidecar's output: the relay shuts its socket's
// writing side.
func (c *Conn) CloseWrite() error {
	_, err := c.s.Write(endFrame)
	return err
}

// Close ends the relay, and so the connection in the sandbox.
func (c *Conn) Close() error { return c.s.Close() }

// Stderr is what the relay wrote to its stderr so far.
func (c *Conn) Stderr() string { return c.s.Stderr() }

type streamAddr struct{}

func (streamAddr) Network() string { return "exec" }
func (streamAddr) String() string  { return "sandbox" }

// LocalAddr and RemoteAddr name the exec's stream.
func (c *Conn) LocalAddr() net.Addr  { return streamAddr{} }
func (c *Conn) RemoteAddr() net.Addr { return streamAddr{} }

// Deadlines are not kept: an exec's stream has none. Its users (the
// DevTools relay's HTTP transport, Join) set none.
func (c *Conn) SetDeadline(time.Time) error      { return nil }
func (c *Conn) SetReadDeadline(time.Time) error  { return nil }
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }
