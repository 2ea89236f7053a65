package rfbtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// DialViewer connects the way a noVNC page loaded from viewerURL does (the
// sidecar's viewerUrl or watchUrl): a WebSocket to websockify on the page's
// host, and the password from the URL's fragment. What the page would do
// with view_only=true is left out: every message is sent as it is.
func DialViewer(viewerURL string, timeout time.Duration) (*Conn, error) {
	u, err := url.Parse(viewerURL)
	if err != nil {
		return nil, err
	}
	fragment, err := url.ParseQuery(u.Fragment)
	if err != nil {
		return nil, fmt.Errorf("rfb: viewer URL fragment: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dialer := websocket.Dialer{Subprotocols: []string{"binary"}}
	ws, resp, err := dialer.DialContext(ctx, "ws://"+u.Host+"/websockify", nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("rfb: websocket: %w", err)
	}
	return NewConn(&wsConn{Conn: ws}, fragment.Get("password"), timeout)
}

// wsConn is a WebSocket carrying a byte stream in binary messages, as
// websockify does, seen as a net.Conn.
type wsConn struct {
	*websocket.Conn
	rmu sync.Mutex // guards r
	r   io.Reader  // the rest of the message being read
	wmu sync.Mutex // serializes writes, which gorilla/websocket requires
}

var _ net.Conn = (*wsConn)(nil)

func (c *wsConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if c.r != nil {
			n, err := c.r.Read(p)
			if errors.Is(err, io.EOF) {
				c.r = nil
				if n == 0 {
					continue
				}
				err = nil
			}
			return n, err
		}
		_, r, err := c.NextReader()
		if err != nil {
			if _, closed := err.(*websocket.CloseError); closed {
				return 0, io.EOF
			}
			return 0, err
		}
		c.r = r
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *wsConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}
