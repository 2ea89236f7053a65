// Package cdprelay serves a browser's DevTools Protocol, which listens only
// inside a sandbox, on a 127.0.0.1 port of the host, to clients that know a
// secret: the first segment of every path must be it, and only DevTools
// WebSocket paths (/devtools/...) pass, and /json/version, which clients
// given an http:// address read first (Playwright's connectOverCDP,
// Puppeteer's browserURL): its webSocketDebuggerUrl is rewritten to the
// relay's. There is no /json listing and no other page: the ws:// address
// sandbox/browser hands out is all a client needs. It knows nothing of
// Docker: dial reaches the browser.
package cdprelay

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"
)

// Dial opens a connection to the browser's DevTools port.
type Dial func(ctx context.Context) (net.Conn, error)

// Relay is one sandbox run's DevTools relay.
type Relay struct {
	secret string
	ln     net.Listener
	srv    *http.Server
}

// NewSecret returns a fresh secret for a relay's paths.
func NewSecret() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a DevTools secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Start listens on a free 127.0.0.1 port and relays requests that carry
// secret to the browser that dial reaches.
func Start(secret string, dial Dial) (*Relay, error) {
	if len(secret) < 16 {
		return nil, errors.New("cdprelay: the secret is too short")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the DevTools relay: %w", err)
	}
	r := &Relay{secret: secret, ln: ln}
	r.srv = &http.Server{Handler: r.handler(dial), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln) //nolint:errcheck // ends with Close
	return r, nil
}

// Endpoint is the ws:// address of the browser path (as the browser
// reports it: /devtools/browser/ID) through the relay.
func (r *Relay) Endpoint(path string) string {
	return "ws://" + r.ln.Addr().String() + "/" + r.secret + path
}

// Port is the host port the relay listens on.
func (r *Relay) Port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// Close stops the relay and ends its connections.
func (r *Relay) Close() error { return r.srv.Close() }

// strip returns the path without its secret segment, and whether the
// request may pass: the secret matched and what is left is a DevTools path.
func (r *Relay) strip(path string) (string, bool) {
	seg, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	ok := subtle.ConstantTimeCompare([]byte(seg), []byte(r.secret)) == 1
	path = "/" + rest
	return path, ok && (strings.HasPrefix(path, "/devtools/") || isVersion(path))
}

// isVersion says whether path is the browser's /json/version.
func isVersion(path string) bool { return strings.TrimSuffix(path, "/") == "/json/version" }

// maxVersion bounds the /json/version answer read: about 500 bytes.
const maxVersion = 64 << 10

// rewriteVersion points /json/version's webSocketDebuggerUrl, which names
// the browser's own address in the sandbox, at the relay.
func (r *Relay) rewriteVersion(resp *http.Response) error {
	if !isVersion(resp.Request.URL.Path) || resp.StatusCode != http.StatusOK {
		return nil
	}
	defer resp.Body.Close()
	var version map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxVersion)).Decode(&version); err != nil {
		return fmt.Errorf("the browser's /json/version: %w", err)
	}
	if ws, ok := version["webSocketDebuggerUrl"].(string); ok {
		if i := strings.Index(ws, "/devtools/"); i >= 0 {
			version["webSocketDebuggerUrl"] = r.Endpoint(ws[i:])
		}
	}
	body, err := json.Marshal(version)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// handler refuses what does not carry the secret, and proxies the rest
// (WebSocket upgrades included) to the browser.
func (r *Relay) handler(dial Dial) http.Handler {
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			path, _ := r.strip(pr.In.URL.Path)
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "127.0.0.1"
			pr.Out.URL.Path, pr.Out.URL.RawPath = path, ""
			// Chromium accepts only an IP address or localhost as Host.
			pr.Out.Host = "127.0.0.1"
		},
		ModifyResponse: r.rewriteVersion,
		Transport: &http.Transport{
			DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
			DisableKeepAlives: true,
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, ok := r.strip(req.URL.Path); !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		proxy.ServeHTTP(w, req)
	})
}
