package desktop

import (
	"bytes"
	"context"
	"crypto/des"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/gorilla/websocket"
)

// A banner proves little: any program can send "RFB 003.008\n". The
// sandbox's user can hold 127.0.0.1:5900 whenever x11vnc is not
// listening, and serve viewers a desktop of its own that asks no password
// (docs/security.md, The VNC server behind the viewer). So readiness also
// authenticates, twice, through websockify: with the control password,
// which the real x11vnc accepts, and with a wrong one, which it refuses.
// RFB's VNC authentication proves nothing to the client (the server only
// says yes or no), but a server without the password cannot tell the two
// answers apart: one that says yes to both, or no to both, is not the
// sandbox's.

// ErrNotOurVNCServer: what answers behind the viewer is not the sandbox's
// own VNC server. A desktop still starting never gives it.
var ErrNotOurVNCServer = errors.New("the VNC server behind the viewer is not the sandbox's own")

// RFB 3.8's security types and results (RFC 6143, 7.1.2 and 7.2.2).
const (
	securityNone     = 1
	securityVNCAuth  = 2
	securityResultOK = 0
)

// wrongPassword is the probe's second answer: no password of the
// sidecar's has a '~' (secretAlphabet), so none is this one.
const wrongPassword = "~~~~~~~~"

// checkAuth opens a WebSocket to the viewer's VNC server at url and
// authenticates with password: it says whether the server took it. A
// server that offers no authentication, or any but VNC authentication's,
// is ErrNotOurVNCServer.
func checkAuth(ctx context.Context, url, password string) (bool, error) {
	c, err := dialRFB(ctx, url)
	if err != nil {
		return false, err
	}
	defer c.close()
	if err := c.expectBanner(); err != nil {
		return false, err
	}
	if err := c.send([]byte("RFB 003.008\n")); err != nil {
		return false, err
	}
	n, err := c.read(1)
	if err != nil {
		return false, err
	}
	types, err := c.read(int(n[0]))
	switch {
	case err != nil:
		return false, err
	case n[0] == 0:
		return false, fmt.Errorf("the VNC server refused the probe")
	case !bytes.Equal(types, []byte{securityVNCAuth}):
		return false, fmt.Errorf("%w: it offers the security types %v (None is %d), not the password alone", ErrNotOurVNCServer, types, securityNone)
	}
	if err := c.send([]byte{securityVNCAuth}); err != nil {
		return false, err
	}
	challenge, err := c.read(16)
	if err != nil {
		return false, err
	}
	if err := c.send(vncResponse(challenge, password)); err != nil {
		return false, err
	}
	result, err := c.read(4)
	if err != nil {
		return false, err
	}
	return binary.BigEndian.Uint32(result) == securityResultOK, nil
}

// provesPassword checks that the server at url takes the password and
// refuses a wrong one.
func provesPassword(ctx context.Context, url, password string) error {
	ok, err := checkAuth(ctx, url, password)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: it refused the sandbox's password", ErrNotOurVNCServer)
	}
	if ok, err = checkAuth(ctx, url, wrongPassword); err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("%w: it took a wrong password too", ErrNotOurVNCServer)
	}
	return nil
}

// vncResponse is VNC authentication's answer to challenge: the challenge
// encrypted with DES, the password (its first 8 bytes, zero-padded) as the
// key with each byte's bits reversed.
func vncResponse(challenge []byte, password string) []byte {
	key := make([]byte, 8)
	copy(key, password)
	for i, b := range key {
		key[i] = bits.Reverse8(b)
	}
	block, _ := des.NewCipher(key) // 8 bytes: never an error
	out := make([]byte, len(challenge))
	for i := 0; i+8 <= len(challenge); i += 8 {
		block.Encrypt(out[i:i+8], challenge[i:i+8])
	}
	return out
}

// rfbConn is the probe's RFB session over a WebSocket through websockify:
// what the server sends arrives in binary messages of any size, each read
// within the probe's bounds.
type rfbConn struct {
	ws      *websocket.Conn
	pending []byte
	stop    func() bool
}

func dialRFB(ctx context.Context, url string) (*rfbConn, error) {
	dialer := websocket.Dialer{
		Subprotocols:     []string{"binary"},
		HandshakeTimeout: 5 * time.Second,
		NetDialContext:   boundedDial(maxWebSocketRead),
	}
	ws, resp, err := dialer.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	deadline, _ := ctx.Deadline() // Probe gives every ctx one
	ws.SetReadDeadline(deadline)
	ws.SetWriteDeadline(deadline)
	// A frame that declares more is refused at its header, unread.
	ws.SetReadLimit(maxBannerMessage)
	c := &rfbConn{ws: ws}
	c.stop = context.AfterFunc(ctx, func() { ws.Close() }) // a cancel ends a read
	return c, nil
}

func (c *rfbConn) close() {
	c.stop()
	c.ws.Close()
}

// read returns the next n bytes the server sent.
func (c *rfbConn) read(n int) ([]byte, error) {
	for len(c.pending) < n {
		_, msg, err := c.ws.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("the VNC server's answer: %w", err)
		}
		c.pending = append(c.pending, msg...)
	}
	got := c.pending[:n:n]
	c.pending = c.pending[n:]
	return got, nil
}

func (c *rfbConn) send(p []byte) error { return c.ws.WriteMessage(websocket.BinaryMessage, p) }

// expectBanner reads the server's ProtocolVersion.
func (c *rfbConn) expectBanner() error {
	got, err := c.read(len(rfbBanner) + 2)
	if err != nil {
		return fmt.Errorf("no RFB banner from the VNC server: %w", err)
	}
	if !bytes.HasPrefix(got, rfbBanner) {
		return fmt.Errorf("unexpected greeting from the VNC server: %q", got)
	}
	return nil
}
