package relay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pipeSession is a Session whose far end (the relay's stdin and stdout)
// the test drives.
type pipeSession struct {
	net.Conn
	stderr string
}

func (p pipeSession) Stderr() string { return p.stderr }

// sessionPair returns a session and the relay's end of it.
func sessionPair(t *testing.T) (pipeSession, net.Conn) {
	near, far := socketPair()
	t.Cleanup(func() { near.Close(); far.Close() })
	return pipeSession{Conn: near}, far
}

// socketPair returns the ends of a Unix socket pair: buffered both ways,
// as an exec's stream is (a net.Pipe is not).
func socketPair() (net.Conn, net.Conn) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		panic(err)
	}
	ends := [2]net.Conn{}
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			panic(err)
		}
		ends[i] = c
	}
	return ends[0], ends[1]
}

func frame(payload string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	return append(b, payload...)
}

// relayWrites has the far end write b, then close its stdout if end.
func relayWrites(far net.Conn, end bool, parts ...[]byte) {
	go func() {
		for _, p := range parts {
			if _, err := far.Write(p); err != nil {
				return
			}
		}
		if end {
			far.Close()
		}
	}()
}

func TestConnReadsFramesToTheEndFrame(t *testing.T) {
	for _, how := range []string{"Read", "WriteTo"} {
		t.Run(how, func(t *testing.T) {
			s, far := sessionPair(t)
			relayWrites(far, false, frame("abc"), frame("defg"), frame(""), frame("after the end"))
			c := NewConn(s)
			var got bytes.Buffer
			var err error
			if how == "Read" {
				_, err = io.Copy(&got, struct{ io.Reader }{c}) // Read alone
			} else {
				_, err = c.WriteTo(&got)
			}
			if err != nil || got.String() != "abcdefg" {
				t.Fatalf("%q, %v; want abcdefg and no error", got.String(), err)
			}
			if n, err := c.Read(make([]byte, 10)); n != 0 || err != io.EOF {
				t.Errorf("after the end frame: %d, %v; want io.EOF", n, err)
			}
		})
	}
}

// A stream that ends without the relay's end frame is an error, never a
// clean end: the connection is dropped, not half-closed.
func TestConnStreamEndWithoutTheEndFrameIsAnError(t *testing.T) {
	for _, sent := range [][]byte{{}, {0, 0}, frame("abc")[:5]} {
		for _, how := range []string{"Read", "WriteTo"} {
			s, far := sessionPair(t)
			relayWrites(far, true, sent)
			c := NewConn(s)
			var err error
			if how == "Read" {
				_, err = io.ReadAll(c)
			} else {
				_, err = c.WriteTo(io.Discard)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s after %v: %v; want io.ErrUnexpectedEOF", how, sent, err)
			}
		}
	}
}

func TestConnRefusesAFrameNoRelayWrites(t *testing.T) {
	s, far := sessionPair(t)
	relayWrites(far, false, binary.BigEndian.AppendUint32(nil, maxFrame+1))
	if _, err := io.ReadAll(NewConn(s)); !errors.Is(err, ErrFrame) {
		t.Errorf("%v; want ErrFrame", err)
	}
}

// readFrames reads frames from r until the end frame, and returns their
// sizes and payload.
func readFrames(r io.Reader) (sizes []int, payload string, err error) {
	var all strings.Builder
	for {
		var head [4]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return sizes, all.String(), err
		}
		n := int(binary.BigEndian.Uint32(head[:]))
		if n == 0 {
			return sizes, all.String(), nil
		}
		sizes = append(sizes, n)
		if _, err := io.CopyN(&all, r, int64(n)); err != nil {
			return sizes, all.String(), err
		}
	}
}

func TestConnWritesFramesOfAtMostAChunk(t *testing.T) {
	big := strings.Repeat("x", Chunk+10)
	for _, how := range []string{"Write", "ReadFrom"} {
		t.Run(how, func(t *testing.T) {
			s, far := sessionPair(t)
			c := NewConn(s)
			go func() {
				if how == "Write" {
					c.Write([]byte(big))
				} else {
					c.ReadFrom(strings.NewReader(big))
				}
				c.CloseWrite()
			}()
			sizes, payload, err := readFrames(far)
			if err != nil || payload != big {
				t.Fatalf("read %d bytes, %v", len(payload), err)
			}
			for _, n := range sizes {
				if n > Chunk {
					t.Errorf("a frame of %d bytes, more than %d", n, Chunk)
				}
			}
		})
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// Join passes each side's end of output on alone: a client that ends its
// request still reads the answer, over a relay's frames.
func TestJoinPassesHalfClosesOn(t *testing.T) {
	client, host := tcpPair(t)
	s, far := sessionPair(t)
	done := make(chan struct{})
	go func() { Join(host, NewConn(s)); close(done) }()

	client.Write([]byte("request"))
	client.CloseWrite()
	_, got, err := readFrames(far) // the relay reads to the sidecar's end frame
	if err != nil || got != "request" {
		t.Fatalf("the relay read %q, %v", got, err)
	}
	far.Write(append(frame("answer"), frame("")...))
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, err := io.ReadAll(client)
	if err != nil || string(answer) != "answer" {
		t.Fatalf("the client read %q, %v", answer, err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Join did not return once both sides ended")
	}
}

// A relay that goes away without its end frame drops the host's
// connection rather than ending it cleanly.
func TestJoinDropsTheConnectionWhenTheRelayBreaks(t *testing.T) {
	client, host := tcpPair(t)
	s, far := sessionPair(t)
	done := make(chan struct{})
	go func() { Join(host, NewConn(s)); close(done) }()
	far.Write(frame("partial"))
	far.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Join did not return when the relay broke")
	}
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(client)
	if string(got) != "partial" {
		t.Errorf("the client read %q before the end", got)
	}
}
