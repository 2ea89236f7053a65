package rpc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// framingWebSocket runs a conversation over a real WebSocket connection,
// one message per frame (see TestConversations).
const framingWebSocket Framing = "websocket"

// serveWebSocket serves s to one WebSocket client over loopback, with the
// server's framer watched so that the conversation knows when it is idle.
// The handler's token and origin checks have their own test: here the
// connection is upgraded directly.
func serveWebSocket(t *testing.T, ctx context.Context, s *Server, rec *recorder, opts ConnOptions, done chan struct{}) (clientConn, *Stream) {
	wf := &watchedFramer{rec: rec}
	streams := make(chan *Stream, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer close(done)
		wf.set(&wsFramer{conn: conn})
		stream := newStream(wf, wsCloser{conn}, stallTimeout)
		streams <- stream
		s.Serve(ctx, stream, opts)
	}))
	t.Cleanup(srv.Close)
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	go func() {
		for {
			typ, _, err := client.ReadMessage()
			if err != nil {
				return
			}
			if typ != websocket.TextMessage {
				rec.note("the server sent a binary message")
			}
		}
	}()
	return &wsClient{conn: client, watchedFramer: wf}, <-streams
}

// wsClient is the test's end of a WebSocket conversation.
type wsClient struct {
	conn *websocket.Conn
	*watchedFramer
}

func (c *wsClient) send(data []byte) error {
	return c.conn.WriteMessage(websocket.TextMessage, data)
}

func (c *wsClient) closeInput() {
	c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
}

// watchedFramer is the server's framer, counting the messages it has taken
// and the reads it has started, and recording each message it wrote.
type watchedFramer struct {
	rec *recorder

	mu          sync.Mutex // guards the fields below
	f           framer
	reads       int
	delivered   int64
	deliveredBy int
	ended       bool
}

func (w *watchedFramer) set(f framer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.f = f
}

func (w *watchedFramer) ReadFrame() ([]byte, error) {
	w.mu.Lock()
	w.reads++
	call, f := w.reads, w.f
	w.mu.Unlock()
	frame, err := f.ReadFrame()
	var fe *frameError
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil || errors.As(err, &fe) {
		w.delivered++
		w.deliveredBy = call
	} else {
		w.ended = true
	}
	return frame, err
}

func (w *watchedFramer) WriteFrame(msg []byte) error {
	w.mu.Lock()
	f := w.f
	w.mu.Unlock()
	err := f.WriteFrame(msg)
	if err == nil {
		w.rec.Write(msg)
	}
	return err
}

func (w *watchedFramer) consumed(n int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.delivered >= n && (w.reads > w.deliveredBy || w.ended)
}

func (w *watchedFramer) atEOF() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
}

// TestWebSocketRefusesBeforeReadingJSON checks the token and Origin rules:
// a refused upgrade gets its HTTP status and no session is ever started.
func TestWebSocketRefusesBeforeReadingJSON(t *testing.T) {
	const token = "s3cret-token"
	fake := newFakeService()
	s := newTestServer(fake, Info{Name: "pilot-sandbox", Version: "test"}, zerolog.Nop())
	h, err := s.WebSocketHandler(WebSocketOptions{Token: token, Origins: []string{"http://127.0.0.1:4000"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	base := "ws" + strings.TrimPrefix(srv.URL, "http") + "/rpc"
	for _, tc := range []struct {
		name   string
		query  string
		origin string
		status int // 0: the upgrade succeeds
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"empty token", "?token=", "", http.StatusUnauthorized},
		{"wrong token", "?token=s3cret-tokeN", "", http.StatusUnauthorized},
		{"token prefix", "?token=s3cret", "", http.StatusUnauthorized},
		{"wrong token, right origin", "?token=x", "http://127.0.0.1:4000", http.StatusUnauthorized},
		{"right token, other origin", "?token=" + token, "http://evil.example", http.StatusForbidden},
		{"right token, other port", "?token=" + token, "http://127.0.0.1:4001", http.StatusForbidden},
		{"right token, null origin", "?token=" + token, "null", http.StatusForbidden},
		{"right token, the panel's origin", "?token=" + token, "http://127.0.0.1:4000", 0},
		{"right token, no origin (not a browser)", "?token=" + token, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			header := http.Header{}
			if tc.origin != "" {
				header.Set("Origin", tc.origin)
			}
			conn, resp, err := websocket.DefaultDialer.Dial(base+tc.query, header)
			if tc.status != 0 {
				if err == nil {
					conn.Close()
					t.Fatal("the upgrade succeeded")
				}
				if resp == nil || resp.StatusCode != tc.status {
					t.Fatalf("response %v, want status %d", resp, tc.status)
				}
				return
			}
			if err != nil {
				t.Fatalf("upgrade refused: %v (%v)", err, resp)
			}
			defer conn.Close()
			conn.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"docker/status"}`))
			var reply map[string]any
			if err := conn.ReadJSON(&reply); err != nil || reply["id"] != 1.0 || reply["result"] == nil {
				t.Fatalf("reply %v, %v", reply, err)
			}
		})
	}
	if _, err := s.WebSocketHandler(WebSocketOptions{}); err == nil {
		t.Error("a handler without a token was made")
	}
}

// TestWebSocketMessages checks what only WebSocket has: binary messages and
// oversized ones are answered and skipped, and exit ends only its own
// connection.
func TestWebSocketMessages(t *testing.T) {
	s := newTestServer(newFakeService(), Info{Name: "pilot-sandbox", Version: "test"}, zerolog.Nop())
	h, _ := s.WebSocketHandler(WebSocketOptions{Token: "t"})
	srv := httptest.NewServer(h)
	defer srv.Close()
	dial := func() *websocket.Conn {
		conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/rpc?token=t", nil)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		return conn
	}
	a, b := dial(), dial()
	defer a.Close()
	defer b.Close()
	expect := func(conn *websocket.Conn, code float64, says string) {
		t.Helper()
		var m map[string]any
		if err := conn.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		code2, _, _ := errorOf(m)
		if msg, _ := m["error"].(map[string]any); code2 != code || says != "" && !strings.Contains(msg["message"].(string), says) {
			t.Fatalf("got %v, want code %v saying %q", m, code, says)
		}
	}
	a.WriteMessage(websocket.BinaryMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"docker/status"}`))
	expect(a, -32600, "binary message")
	a.WriteMessage(websocket.TextMessage, []byte(strings.Repeat(" ", MaxFrameBytes+1)))
	expect(a, -32600, "limit of 16777216 bytes")
	a.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":2,"method":"docker/status"}`))
	expect(a, 0, "")
	a.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"exit"}`))
	if _, _, err := a.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Errorf("after exit: %v, want a normal close", err)
	}
	b.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":3,"method":"docker/status"}`))
	expect(b, 0, "")
}

func errorOf(m map[string]any) (code float64, kind, field string) {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0, "", ""
	}
	data, _ := e["data"].(map[string]any)
	kind, _ = data["kind"].(string)
	field, _ = data["field"].(string)
	return e["code"].(float64), kind, field
}
