package ports

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Frames between the sidecar and a relay in the sandbox (relayPump): a
// 4-byte big-endian length, then that many bytes; length 0 ends that
// side's output.
const (
	// frameChunk is the most the sidecar puts in a frame, and what the
	// relay reads at a time.
	frameChunk = 256 << 10
	// maxFrame bounds a frame from a relay.
	maxFrame = 1 << 20
)

// errFrame is a frame no relay writes.
var errFrame = errors.New("a bad frame from the relay")

// endFrame ends a side's output.
var endFrame = []byte{0, 0, 0, 0}

// copyFrames writes the payload of the relay's frames to w until the
// frame of length 0, and returns nil then; the stream's end before it is
// an error (the relay or the sandbox went away).
func copyFrames(w io.Writer, r *bufio.Reader) error {
	var head [4]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return fmt.Errorf("relay stream: %w", err)
		}
		n := binary.BigEndian.Uint32(head[:])
		switch {
		case n == 0:
			return nil
		case n > maxFrame:
			return fmt.Errorf("%w: %d bytes", errFrame, n)
		}
		if _, err := io.CopyN(w, r, int64(n)); err != nil {
			return err
		}
	}
}

// copyToFrames sends what r reads to the relay as frames, then the end
// frame once r ends; an error of r is returned without it.
func copyToFrames(w io.Writer, r io.Reader) error {
	buf := make([]byte, 4+frameChunk)
	for {
		n, err := r.Read(buf[4:])
		if n > 0 {
			binary.BigEndian.PutUint32(buf, uint32(n))
			if _, werr := w.Write(buf[:4+n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			_, err = w.Write(endFrame)
			return err
		}
		if err != nil {
			return err
		}
	}
}

// pumpFramed carries one connection between conn, on the host, and the
// relay's exec, whose other end is a socket in the sandbox, until both
// directions end, passing each side's end of output on as a half-close;
// then it closes both. r reads the session.
func pumpFramed(conn *net.TCPConn, session service.ExecSession, r *bufio.Reader) {
	var wg sync.WaitGroup
	wg.Go(func() {
		// Host to sandbox.
		if err := copyToFrames(session, conn); err != nil {
			session.Close()
		}
	})
	if err := copyFrames(conn, r); err == nil {
		conn.CloseWrite()
	} else {
		conn.Close()
		session.Close()
	}
	wg.Wait()
	session.Close()
	conn.Close()
}
