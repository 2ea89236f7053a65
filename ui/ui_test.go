package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	rpc := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h, err := Handler(Options{Project: `/home/me/a "b" <c> & d`, Port: 4242, RPC: rpc})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, host, path string
		status             int
		contentType, body  string
	}{
		{"GET", "127.0.0.1:4242", "/", 200, "text/html", `project="/home/me/a &#34;b&#34; &lt;c&gt; &amp; d"`},
		{"GET", "localhost:4242", "/", 200, "text/html", "<pilot-sandbox-panel"},
		{"GET", "127.0.0.1:4242", "/panel/panel.js", 200, "text/javascript", "customElements.define"},
		{"GET", "127.0.0.1:4242", "/panel/panel.css", 200, "text/css", ":host"},
		{"GET", "127.0.0.1:4242", "/client/websocket.js", 200, "text/javascript", "connectWebSocket"},
		{"GET", "127.0.0.1:4242", "/rpc", http.StatusTeapot, "", ""},
		// The template only filled in, no directory listings, nothing else.
		{"GET", "127.0.0.1:4242", "/panel/index.html", 404, "", ""},
		{"GET", "127.0.0.1:4242", "/panel/", 404, "", ""},
		{"GET", "127.0.0.1:4242", "/ui.go", 404, "", ""},
		{"GET", "127.0.0.1:4242", "/panel/missing.js", 404, "", ""},
		{"GET", "127.0.0.1:4242", "/package.json", 404, "", ""},
		{"POST", "127.0.0.1:4242", "/", 405, "", ""},
		// DNS rebinding: a page whose name points at 127.0.0.1 sends its name.
		{"GET", "evil.example:4242", "/", http.StatusMisdirectedRequest, "", ""},
		{"GET", "127.0.0.1:4243", "/", http.StatusMisdirectedRequest, "", ""},
		{"GET", "evil.example:4242", "/rpc", http.StatusMisdirectedRequest, "", ""},
	} {
		req := httptest.NewRequest(tc.method, "http://"+tc.host+tc.path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Body)
		name := tc.method + " " + tc.host + tc.path
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d", name, rec.Code, tc.status)
			continue
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.contentType) {
			t.Errorf("%s: Content-Type %q, want %s", name, rec.Header().Get("Content-Type"), tc.contentType)
		}
		if !strings.Contains(string(body), tc.body) {
			t.Errorf("%s: body does not contain %q:\n%s", name, tc.body, body)
		}
		if tc.status == 200 && !strings.Contains(rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: no Content-Security-Policy", name)
		}
	}
}

func TestHandlerNeedsAProject(t *testing.T) {
	if _, err := Handler(Options{Port: 1}); err == nil {
		t.Error("no error without a project")
	}
}
