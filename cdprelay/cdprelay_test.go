package cdprelay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/cdprelay"
)

const secret = "0123456789abcdef0123456789abcdef"

// fakeBrowser answers every path with the path it was asked for, and
// upgrades /devtools/ requests to an echo connection, like Chromium's
// WebSocket handshake.
func fakeBrowser(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "websocket" {
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			rw.Flush()
			line, _ := rw.ReadString('\n')
			rw.WriteString("echo " + line)
			rw.Flush()
			return
		}
		if strings.TrimSuffix(r.URL.Path, "/") == "/json/version" {
			io.WriteString(w, `{"Browser": "Chrome/1", "webSocketDebuggerUrl": "ws://127.0.0.1/devtools/browser/abc"}`)
			return
		}
		io.WriteString(w, "path="+r.URL.Path+" host="+r.Host)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func startRelay(t *testing.T) *cdprelay.Relay {
	addr := fakeBrowser(t).Listener.Addr().String()
	r, err := cdprelay.Start(secret, func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRelayRefusesWithoutTheSecret(t *testing.T) {
	r := startRelay(t)
	base := strings.Replace(r.Endpoint(""), "ws://", "http://", 1)
	host := strings.TrimSuffix(base, "/"+secret)
	tests := []struct {
		name, url string
		want      int
	}{
		{"no secret", host + "/devtools/browser/x", http.StatusNotFound},
		{"listing", host + "/json", http.StatusNotFound},
		{"listing with the secret", base + "/json/list", http.StatusNotFound},
		{"another page with the secret", base + "/json/new", http.StatusNotFound},
		{"wrong secret", host + "/" + strings.Repeat("f", len(secret)) + "/devtools/browser/x", http.StatusNotFound},
		{"secret's prefix", host + "/" + secret[:20] + "/devtools/browser/x", http.StatusNotFound},
		{"devtools path", base + "/devtools/browser/x", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := http.Get(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%s)", res.StatusCode, tt.want, body)
			}
			if tt.want == http.StatusOK && string(body) != "path=/devtools/browser/x host=127.0.0.1" {
				t.Fatalf("the browser saw %q", body)
			}
		})
	}
}

// /json/version, which clients given an http:// address read first,
// answers with the browser's WebSocket address through the relay.
func TestRelayAnswersVersionWithItsOwnAddress(t *testing.T) {
	r := startRelay(t)
	base := strings.Replace(r.Endpoint(""), "ws://", "http://", 1)
	for _, path := range []string{"/json/version", "/json/version/"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var version map[string]string
		err = json.NewDecoder(res.Body).Decode(&version)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d, %v", path, res.StatusCode, err)
		}
		if want := r.Endpoint("/devtools/browser/abc"); version["webSocketDebuggerUrl"] != want || version["Browser"] != "Chrome/1" {
			t.Errorf("%s: %v; want webSocketDebuggerUrl %s", path, version, want)
		}
	}
}

func TestRelayPassesWebSocketUpgrades(t *testing.T) {
	r := startRelay(t)
	addr := strings.TrimPrefix(r.Endpoint(""), "ws://")
	addr = addr[:strings.Index(addr, "/")]
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /"+secret+"/devtools/browser/x HTTP/1.1\r\nHost: "+addr+
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", res.StatusCode)
	}
	io.WriteString(conn, "hello\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "echo hello\n" {
		t.Fatalf("through the upgraded connection: %q, %v", line, err)
	}
}

func TestStartRefusesAShortSecret(t *testing.T) {
	if _, err := cdprelay.Start("short", nil); err == nil {
		t.Fatal("a short secret was accepted")
	}
}
