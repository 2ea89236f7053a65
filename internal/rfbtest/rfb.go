// Package rfbtest is a minimal VNC (RFB 3.8) client for tests: it
// authenticates with VNC authentication and sends the input messages a
// viewer sends (pointer, keys, clipboard), with nothing in between that
// would filter them, as noVNC's view_only setting does. Tests use it to
// prove that the VNC server itself enforces a view-only password.
package rfbtest

import (
	"bufio"
	"crypto/des"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ErrAuth is the server refusing the password.
var ErrAuth = errors.New("rfb: authentication failed")

// Client message types (RFC 6143, 7.5).
const (
	msgSetEncodings       = 2
	msgFramebufferRequest = 3
	msgKeyEvent           = 4
	msgPointerEvent       = 5
	msgClientCutText      = 6
)

// Server message types (RFC 6143, 7.6).
const (
	msgFramebufferUpdate = 0
	msgColourMap         = 1
	msgBell              = 2
	msgServerCutText     = 3
)

// securityVNC is VNC authentication, the DES challenge and response.
const securityVNC = 2

// Conn is an authenticated RFB session.
type Conn struct {
	conn net.Conn
	r    *bufio.Reader
	// Width and Height are the framebuffer's size from ServerInit.
	Width, Height int
	bpp           int // bits per pixel of the server's pixel format
	// Name is the desktop's name from ServerInit.
	Name string
}

// Dial connects to a VNC server, authenticates with password and completes
// the initialisation as a shared client. It fails with ErrAuth when the
// server refuses the password.
func Dial(addr, password string, timeout time.Duration) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return NewConn(nc, password, timeout)
}

// NewConn runs the RFB handshake on an open connection (see Dial).
func NewConn(nc net.Conn, password string, timeout time.Duration) (*Conn, error) {
	nc.SetDeadline(time.Now().Add(timeout))
	c := &Conn{conn: nc, r: bufio.NewReader(nc)}
	if err := c.handshake(password); err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

func (c *Conn) handshake(password string) error {
	banner := make([]byte, 12)
	if _, err := io.ReadFull(c.r, banner); err != nil {
		return fmt.Errorf("rfb: banner: %w", err)
	}
	if string(banner[:7]) != "RFB 003" {
		return fmt.Errorf("rfb: not an RFB server: %q", banner)
	}
	if _, err := c.conn.Write([]byte("RFB 003.008\n")); err != nil {
		return err
	}
	if err := c.chooseVNCAuth(); err != nil {
		return err
	}
	if err := c.answerChallenge(password); err != nil {
		return err
	}
	if _, err := c.conn.Write([]byte{1}); err != nil { // ClientInit: shared
		return err
	}
	return c.readServerInit()
}

func (c *Conn) chooseVNCAuth() error {
	n, err := c.r.ReadByte()
	if err != nil {
		return fmt.Errorf("rfb: security types: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("rfb: server refused the connection: %s", c.readReason())
	}
	types := make([]byte, n)
	if _, err := io.ReadFull(c.r, types); err != nil {
		return err
	}
	for _, t := range types {
		if t == securityVNC {
			_, err := c.conn.Write([]byte{securityVNC})
			return err
		}
	}
	return fmt.Errorf("rfb: server does not offer VNC authentication (offers %v)", types)
}

func (c *Conn) answerChallenge(password string) error {
	challenge := make([]byte, 16)
	if _, err := io.ReadFull(c.r, challenge); err != nil {
		return fmt.Errorf("rfb: challenge: %w", err)
	}
	block, err := des.NewCipher(Key(password))
	if err != nil {
		return err
	}
	response := make([]byte, 16)
	block.Encrypt(response[:8], challenge[:8])
	block.Encrypt(response[8:], challenge[8:])
	if _, err := c.conn.Write(response); err != nil {
		return err
	}
	var result uint32
	if err := binary.Read(c.r, binary.BigEndian, &result); err != nil {
		return fmt.Errorf("rfb: security result: %w", err)
	}
	if result != 0 {
		return fmt.Errorf("%w: %s", ErrAuth, c.readReason())
	}
	return nil
}

// readReason reads the length-prefixed reason string of a failure.
func (c *Conn) readReason() string {
	var n uint32
	if binary.Read(c.r, binary.BigEndian, &n) != nil || n > 1<<16 {
		return "(no reason given)"
	}
	reason := make([]byte, n)
	io.ReadFull(c.r, reason)
	return string(reason)
}

func (c *Conn) readServerInit() error {
	var init struct {
		Width, Height uint16
		BPP           uint8
		_             [15]byte // the rest of the pixel format
		NameLength    uint32
	}
	if err := binary.Read(c.r, binary.BigEndian, &init); err != nil {
		return fmt.Errorf("rfb: server init: %w", err)
	}
	if init.NameLength > 1<<16 {
		return errors.New("rfb: server init: absurd name length")
	}
	name := make([]byte, init.NameLength)
	if _, err := io.ReadFull(c.r, name); err != nil {
		return err
	}
	c.Width, c.Height, c.bpp, c.Name = int(init.Width), int(init.Height), int(init.BPP), string(name)
	// Raw encoding only, so that Sync can read any update it gets.
	return c.send(msgSetEncodings, []byte{0, 0, 1}, []byte{0, 0, 0, 0})
}

// Key is the DES key VNC authentication derives from a password: its first
// 8 bytes, zero-padded, each with its bits in reverse order (a quirk of the
// original implementation that every server and viewer keeps).
func Key(password string) []byte {
	key := make([]byte, 8)
	copy(key, password)
	for i, b := range key {
		key[i] = reverseBits(b)
	}
	return key
}

func reverseBits(b byte) byte {
	var out byte
	for range 8 {
		out = out<<1 | b&1
		b >>= 1
	}
	return out
}

func (c *Conn) send(msgType byte, parts ...[]byte) error {
	msg := []byte{msgType}
	for _, p := range parts {
		msg = append(msg, p...)
	}
	c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.conn.Write(msg)
	return err
}

// Pointer sends a PointerEvent: buttons is the mask of buttons down (1 left,
// 2 middle, 4 right, 8 and 16 the wheel).
func (c *Conn) Pointer(buttons byte, x, y int) error {
	return c.send(msgPointerEvent, []byte{buttons}, u16(x), u16(y))
}

// Key sends a KeyEvent for an X keysym.
func (c *Conn) Key(down bool, keysym uint32) error {
	flag := byte(0)
	if down {
		flag = 1
	}
	return c.send(msgKeyEvent, []byte{flag, 0, 0}, binary.BigEndian.AppendUint32(nil, keysym))
}

// CutText sends ClientCutText: text the viewer put on its clipboard.
func (c *Conn) CutText(text string) error {
	return c.send(msgClientCutText, []byte{0, 0, 0}, binary.BigEndian.AppendUint32(nil, uint32(len(text))), []byte(text))
}

// Sync asks for a 1x1 framebuffer update and reads server messages until it
// comes. A server handles a client's messages in order, so when Sync
// returns, every message sent before it has been read and acted on (or
// ignored).
func (c *Conn) Sync(timeout time.Duration) error {
	if err := c.send(msgFramebufferRequest, []byte{0}, u16(0), u16(0), u16(1), u16(1)); err != nil {
		return err
	}
	c.conn.SetReadDeadline(time.Now().Add(timeout))
	defer c.conn.SetReadDeadline(time.Time{})
	for {
		t, err := c.r.ReadByte()
		if err != nil {
			return fmt.Errorf("rfb: waiting for an update: %w", err)
		}
		done, err := c.skipMessage(t)
		if err != nil || done {
			return err
		}
	}
}

// Update asks for the whole framebuffer (only what changed, if
// incremental, as a viewer keeps asking) and reads server messages until
// an update comes.
func (c *Conn) Update(incremental bool, timeout time.Duration) error {
	inc := byte(0)
	if incremental {
		inc = 1
	}
	if err := c.send(msgFramebufferRequest, []byte{inc}, u16(0), u16(0), u16(c.Width), u16(c.Height)); err != nil {
		return err
	}
	c.conn.SetReadDeadline(time.Now().Add(timeout))
	defer c.conn.SetReadDeadline(time.Time{})
	for {
		t, err := c.r.ReadByte()
		if err != nil {
			return fmt.Errorf("rfb: waiting for an update: %w", err)
		}
		done, err := c.skipMessage(t)
		if err != nil || done {
			return err
		}
	}
}

// skipMessage reads past one server message of type t, reporting whether it
// was a framebuffer update.
func (c *Conn) skipMessage(t byte) (update bool, err error) {
	switch t {
	case msgFramebufferUpdate:
		return true, c.skipUpdate()
	case msgColourMap:
		var h struct {
			_      byte
			_      uint16
			Colors uint16
		}
		if err := binary.Read(c.r, binary.BigEndian, &h); err != nil {
			return false, err
		}
		_, err := c.r.Discard(int(h.Colors) * 6)
		return false, err
	case msgBell:
		return false, nil
	case msgServerCutText:
		_, err := c.readCutText()
		return false, err
	}
	return false, fmt.Errorf("rfb: unexpected server message type %d", t)
}

// maxCutText bounds the clipboard text a test reads from the server.
const maxCutText = 1 << 20

// ReadCutText reads server messages until a ServerCutText comes, for at
// most timeout, and returns its text (the bytes as the server sent them).
// Messages of other kinds are read past. Over a WebSocket (DialViewer) a
// timeout ends the session: gorilla/websocket reads nothing after one.
func (c *Conn) ReadCutText(timeout time.Duration) (string, error) {
	c.conn.SetReadDeadline(time.Now().Add(timeout))
	defer c.conn.SetReadDeadline(time.Time{})
	for {
		t, err := c.r.ReadByte()
		if err != nil {
			return "", fmt.Errorf("rfb: waiting for clipboard text: %w", err)
		}
		if t == msgServerCutText {
			return c.readCutText()
		}
		if _, err := c.skipMessage(t); err != nil {
			return "", err
		}
	}
}

// readCutText reads the rest of a ServerCutText message.
func (c *Conn) readCutText() (string, error) {
	var h struct {
		_      [3]byte
		Length uint32
	}
	if err := binary.Read(c.r, binary.BigEndian, &h); err != nil {
		return "", err
	}
	if h.Length > maxCutText {
		return "", fmt.Errorf("rfb: clipboard text of %d bytes, more than %d", h.Length, maxCutText)
	}
	text := make([]byte, h.Length)
	_, err := io.ReadFull(c.r, text)
	return string(text), err
}

func (c *Conn) skipUpdate() error {
	var h struct {
		_     byte
		Rects uint16
	}
	if err := binary.Read(c.r, binary.BigEndian, &h); err != nil {
		return err
	}
	for range h.Rects {
		var r struct {
			X, Y, W, H uint16
			Encoding   int32
		}
		if err := binary.Read(c.r, binary.BigEndian, &r); err != nil {
			return err
		}
		if r.Encoding != 0 {
			return fmt.Errorf("rfb: update in encoding %d, asked for raw only", r.Encoding)
		}
		if _, err := c.r.Discard(int(r.W) * int(r.H) * c.bpp / 8); err != nil {
			return err
		}
	}
	return nil
}

// Close ends the session.
func (c *Conn) Close() error { return c.conn.Close() }

func u16(v int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
