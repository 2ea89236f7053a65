package rpc

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/gorilla/websocket"

	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
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

// WebSocketHandler serves the protocol over WebSocket, one JSON-RPC object
// per text message (docs/protocol.md, Transports); mount it at /rpc. An upgrade
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
	ws := wire.NewWebSocket(conn)
	h.s.Serve(r.Context(), wire.NewFramedStream(ws, ws), ConnOptions{Reconciled: h.opts.Reconciled})
	h.s.log.Info().Str("remote", r.RemoteAddr).Msg("WebSocket client disconnected")
}
