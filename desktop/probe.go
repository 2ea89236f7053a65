package desktop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
)

// rfbBanner is how every RFB 3.x server greets a client: "RFB 003.008\n".
var rfbBanner = []byte("RFB 003.00")

// Probe checks that a client can really use the sandbox's desktop at
// host:wsPort: noVNC's page answers 200, and a WebSocket through websockify
// yields the VNC server's RFB banner. Published ports accept TCP connections
// well before either is true, so connecting is not enough.
func Probe(ctx context.Context, host string, wsPort int) error {
	base := host + ":" + strconv.Itoa(wsPort)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+base+"/vnc.html", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("noVNC page: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("noVNC page: %s", resp.Status)
	}
	return readBanner(ctx, "ws://"+base+"/websockify")
}

// readBanner opens a WebSocket to websockify and reads the first bytes the
// VNC server sends through it.
func readBanner(ctx context.Context, url string) error {
	dialer := websocket.Dialer{Subprotocols: []string{"binary"}, HandshakeTimeout: 5 * time.Second}
	conn, resp, err := dialer.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return fmt.Errorf("websocket: %w", err)
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	conn.SetReadDeadline(deadline)
	var got []byte
	for len(got) < len(rfbBanner) {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return fmt.Errorf("no RFB banner from the VNC server: %w", err)
		}
		got = append(got, msg...)
	}
	if !bytes.HasPrefix(got, rfbBanner) {
		return errors.New("unexpected greeting from the VNC server: " + strconv.Quote(string(got)))
	}
	return nil
}
