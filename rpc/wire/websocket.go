package wire

import (
	"fmt"
	"io"
	"time"

	"github.com/gorilla/websocket"
)

// wsWriteTimeout bounds one message write: a client that stops reading
// loses its connection instead of holding up the server's writes.
const wsWriteTimeout = 30 * time.Second

// WebSocket is a Framer of one JSON-RPC message per WebSocket text message
// (docs/protocol.md, Transports), and the io.Closer that says goodbye:
// NewFramedStream(ws, ws).
type WebSocket struct {
	conn *websocket.Conn
}

// NewWebSocket frames messages on an upgraded connection.
func NewWebSocket(conn *websocket.Conn) *WebSocket { return &WebSocket{conn: conn} }

// ReadFrame returns the next text message. A binary message, or one over
// MaxFrameBytes (read past, not held in memory), is a FrameError the stream
// answers; the connection goes on. A close from the client is the end of
// input.
func (f *WebSocket) ReadFrame() ([]byte, error) {
	typ, r, err := f.conn.NextReader()
	if err != nil {
		if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
			return nil, io.EOF
		}
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFrameBytes+1))
	if err != nil {
		return nil, err
	}
	switch {
	case len(data) > MaxFrameBytes:
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, err
		}
		return nil, &FrameError{Code: CodeInvalidRequest, Message: fmt.Sprintf("message larger than the limit of %d bytes", MaxFrameBytes)}
	case typ != websocket.TextMessage:
		return nil, &FrameError{Code: CodeInvalidRequest, Message: "binary message: send each JSON-RPC message as one text message"}
	}
	return data, nil
}

// WriteFrame sends one text message. A write that fails or times out
// closes the connection: gorilla's connection is unusable after it.
func (f *WebSocket) WriteFrame(msg []byte) error {
	f.conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	err := f.conn.WriteMessage(websocket.TextMessage, msg)
	if err != nil {
		f.conn.Close()
	}
	return err
}

// Close says goodbye with a close message before closing the socket.
func (f *WebSocket) Close() error {
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	f.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
	return f.conn.Close()
}
