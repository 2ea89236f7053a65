package egress_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/rs/zerolog"
)

// TestChromiumObeys: the sandbox's Chromium (the browser image) is held to
// the same policy whatever it does: an allowed page loads, a blocked
// HTTP page shows the 403's reason, and a blocked HTTPS page shows
// Chromium's error page at once, not a hang. Checked through the DevTools
// relay (sandbox/browser).
func TestChromiumObeys(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	s := newSandboxNetWith(t, func(project string) {
		dir := filepath.Join(project, ".pilot")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"sandbox": {"image": "browser"}}`), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	s.judge.Allow("allowed.test", s.server)
	carrier := ports.NewCarrier(s.m, s.docker, ports.Options{Log: zerolog.Nop()})
	defer carrier.Close()
	ws, err := carrier.Browser(context.Background(), s.project)
	if err != nil {
		t.Fatal(err)
	}
	cdp := dialCDP(t, ws)
	for _, c := range []struct{ url, want string }{
		{"http://allowed.test:8080/page", "hello page from allowed.test:8080"},
		{"http://denied.test:8080/page", "pilot-sandbox blocked denied.test:8080"},
		{"https://denied.test:8443/page", "ERR_CONNECTION_RESET"},
	} {
		began := time.Now()
		text := cdp.open(t, c.url, c.want)
		if !strings.Contains(text, c.want) {
			t.Errorf("%s shows %q, want %q", c.url, text, c.want)
		}
		t.Logf("%s: %q after %s", c.url, text, time.Since(began).Round(time.Millisecond))
	}
}

// cdp is a minimal DevTools Protocol client over the browser's endpoint.
type cdp struct {
	mu   sync.Mutex // guards conn's writes and next
	conn *websocket.Conn
	next int
	wait map[int]chan json.RawMessage
}

func dialCDP(t *testing.T, ws string) *cdp {
	conn, _, err := websocket.DefaultDialer.Dial(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &cdp{conn: conn, wait: map[int]chan json.RawMessage{}}
	go func() {
		for {
			var m struct {
				ID     int
				Result json.RawMessage
				Error  json.RawMessage
			}
			if err := conn.ReadJSON(&m); err != nil {
				return
			}
			c.mu.Lock()
			ch := c.wait[m.ID]
			delete(c.wait, m.ID)
			c.mu.Unlock()
			if ch != nil {
				if m.Error != nil {
					ch <- m.Error
				} else {
					ch <- m.Result
				}
			}
		}
	}()
	return c
}

func (c *cdp) call(t *testing.T, session, method string, params any) json.RawMessage {
	t.Helper()
	ch := make(chan json.RawMessage, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.wait[id] = ch
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	err := c.conn.WriteJSON(msg)
	c.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer in 30 s", method)
		return nil
	}
}

// open opens url in a new tab and returns its text once it holds want, or
// what it holds after 20 s.
func (c *cdp) open(t *testing.T, url, want string) string {
	var target struct{ TargetID string }
	json.Unmarshal(c.call(t, "", "Target.createTarget", map[string]any{"url": url}), &target)
	var attached struct{ SessionID string }
	json.Unmarshal(c.call(t, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &attached)
	defer c.call(t, "", "Target.closeTarget", map[string]any{"targetId": target.TargetID})
	var text string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var r struct{ Result struct{ Value string } }
		json.Unmarshal(c.call(t, attached.SessionID, "Runtime.evaluate", map[string]any{
			"expression": "document.body ? document.body.innerText + ' ' + (document.querySelector('.error-code') || {}).textContent : ''", "returnByValue": true}), &r)
		text = strings.TrimSpace(r.Result.Value)
		if strings.Contains(text, want) {
			return text
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("(after 20 s) %s", text)
}
