package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestWebSocketOpeningReachesTheVNCServerWhole: websockify hands x11vnc
// "RFB " as it connects and drops those 4 bytes from what the viewer
// sends (README, Performance). However a viewer splits its opening into
// WebSocket messages, the server must read it whole and answer with its
// security types; a viewer that opens with anything else than an RFB
// ProtocolVersion is disconnected.
func TestWebSocketOpeningReachesTheVNCServerWhole(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("ws://127.0.0.1:%d/websockify", st.WSPort)
	tests := []struct {
		name    string
		opening []string
		answers bool
	}{
		{"one message", []string{"RFB 003.008\n"}, true},
		{"split inside the first 4 bytes", []string{"RF", "B 003", ".008\n"}, true},
		{"the first 4 bytes alone", []string{"RFB ", "003.008\n"}, true},
		{"not RFB", []string{"XYZW 003.008\n"}, false},
		{"not RFB after its first byte", []string{"R", "FC 003.008\n"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := openWith(url, tc.opening)
			switch {
			case tc.answers && err != nil:
				t.Fatalf("after the opening %q: %v", tc.opening, err)
			case tc.answers && (len(got) < 2 || got[0] == 0):
				t.Fatalf("after the opening %q the server sent %q, want its security types", tc.opening, got)
			case !tc.answers && err == nil:
				t.Fatalf("after the opening %q the server sent %q, want the connection closed", tc.opening, got)
			}
		})
	}
}

// openWith reads the server's banner through url, sends opening one
// WebSocket message each, and returns the server's next message.
func openWith(url string, opening []string) ([]byte, error) {
	d := websocket.Dialer{Subprotocols: []string{"binary"}, HandshakeTimeout: 10 * time.Second}
	c, resp, err := d.Dial(url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, banner, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(banner), "RFB 003.") {
		return nil, fmt.Errorf("banner %q: %v", banner, err)
	}
	for _, part := range opening {
		if err := c.WriteMessage(websocket.BinaryMessage, []byte(part)); err != nil {
			return nil, err
		}
	}
	_, msg, err := c.ReadMessage()
	return msg, err
}
