package rpc

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/websocket"
)

// WebSocketOptions say who may open a WebSocket connection.
type WebSocketOptions struct {
	// Token is the per-process secret a client passes as ?token=T. It is
	// required: a handler without one would let any local web page in.
	Token string
	// Origins are the Origin header values allowed, the panel's own
	// (http://127.0.0.1:PORT). A request without an Origin header does not
	// come from a web page; the token alone decides for it.
	Origins []string
	// Reconciled is ConnOptions.Reconciled for every connection.
	Reconciled <-chan struct{}
}

// wsWriteTimeout bounds one message write: a client that stops reading
// loses its connection instead of holding up the server's writes.
const wsWriteTimeout = 30 * time.Second

// WebSocketHandler serves the protocol over WebSocket, one JSON-RPC object
// per text message (PROTOCOL.md, Transports); mount it at /rpc. An upgrade
// without the right token is refused with 401, one from another origin with
// 403, both before anything is read from the client. Each connection is a
// session of its own, with the same validation as stdio; exit closes only
// that connection. A connection ends when the request's context does (give
// the http.Server a BaseContext to end them all).
func (s *Server) WebSocketHandler(opts WebSocketOptions) (http.Handler, error) {
	if opts.Token == "" {
		return nil, errors.New("rpc: a WebSocket handler needs a token")
	}
	return &wsHandler{s: s, opts: opts, upgrader: websocket.Upgrader{
		// The Origin was checked before the upgrade, against the allowed
		// list rather than gorilla's same-host rule.
		CheckOrigin: func(*http.Request) bool { return true },
	}}, nil
}

type wsHandler struct {
	s        *Server
	opts     WebSocketOptions
	upgrader websocket.Upgrader
}

func (h *wsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	if subtle.ConstantTimeCompare([]byte(token), []byte(h.opts.Token)) != 1 {
		http.Error(w, "missing or wrong token", http.StatusUnauthorized)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !slices.Contains(h.opts.Origins, origin) {
		http.Error(w, fmt.Sprintf("origin %q is not allowed", origin), http.StatusForbidden)
		return
	}
	conn, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered the client
	}
	h.s.log.Info().Str("remote", r.RemoteAddr).Msg("WebSocket client connected")
	h.s.Serve(r.Context(), newStream(&wsFramer{conn: conn}, wsCloser{conn}, stallTimeout), ConnOptions{Reconciled: h.opts.Reconciled})
	h.s.log.Info().Str("remote", r.RemoteAddr).Msg("WebSocket client disconnected")
}

// wsFramer reads and writes one JSON-RPC message per WebSocket message.
type wsFramer struct {
	conn *websocket.Conn
}

// ReadFrame returns the next text message. A binary message, or one over
// MaxFrameBytes (read past, not held in memory), is a frameError the stream
// answers; the connection goes on. A close from the client is the end of
// input.
func (f *wsFramer) ReadFrame() ([]byte, error) {
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
		return nil, &frameError{code: codeInvalidRequest, message: fmt.Sprintf("message larger than the limit of %d bytes", MaxFrameBytes)}
	case typ != websocket.TextMessage:
		return nil, &frameError{code: codeInvalidRequest, message: "binary message: send each JSON-RPC message as one text message"}
	}
	return data, nil
}

// WriteFrame sends one text message. A write that fails or times out
// closes the connection: gorilla's connection is unusable after it.
func (f *wsFramer) WriteFrame(msg []byte) error {
	f.conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	err := f.conn.WriteMessage(websocket.TextMessage, msg)
	if err != nil {
		f.conn.Close()
	}
	return err
}

// wsCloser says goodbye with a close message before closing the socket.
type wsCloser struct{ conn *websocket.Conn }

func (c wsCloser) Close() error {
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	c.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
	return c.conn.Close()
}
