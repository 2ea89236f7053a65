// Package ui serves the sandbox panel: its web files (panel/, and the
// JavaScript client it is built on, client/), embedded in the binary, and
// the JSON-RPC WebSocket the page talks to, for `pilot-sandbox ui`.
package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

//go:embed client/*.js panel
var files embed.FS

// Options say what the panel server shows and where it listens.
type Options struct {
	// Project is the canonical path of the project the panel shows.
	Project string
	// Port is the port the server listens on, at 127.0.0.1. Requests must
	// name it in their Host header.
	Port int
	// RPC serves the JSON-RPC WebSocket at /rpc (rpc.Server's
	// WebSocketHandler, which checks the token and the Origin).
	RPC http.Handler
	// Token is the panel's token (as RPC checks it), which the player's
	// requests for a recording carry.
	Token string
	// Recording, when set, serves the project's recordings to the
	// panel's player at /recordings/{id} (media.go).
	Recording Recording
}

// contentSecurityPolicy lets the page load only its own files, talk only to
// its own server (connect-src 'self' covers ws: on the same host and port),
// and frame only a sandbox's viewer on a loopback port.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; media-src 'self'; connect-src 'self'; frame-src http://127.0.0.1:*; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the panel page at /, its files under /panel/ and
// /client/, and opts.RPC at /rpc. It answers only requests whose Host is
// the server's own loopback address, which defeats DNS rebinding: a web
// page whose name was pointed at 127.0.0.1 sends its own name as the Host.
func Handler(opts Options) (http.Handler, error) {
	index, err := renderIndex(opts.Project)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/rpc", opts.RPC)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(index)
	})
	if opts.Recording != nil {
		mux.HandleFunc("GET /recordings/{id}", serveRecording(opts.Token, opts.Recording))
	}
	mux.HandleFunc("GET /panel/", serveFile)
	mux.HandleFunc("GET /client/", serveFile)
	hosts := []string{fmt.Sprintf("127.0.0.1:%d", opts.Port), fmt.Sprintf("localhost:%d", opts.Port)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(hosts, strings.ToLower(r.Host)) {
			http.Error(w, "this server answers only at "+hosts[0], http.StatusMisdirectedRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		// The files change with the binary, and the server's port with
		// every run: nothing here is worth caching.
		h.Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	}), nil
}

// indexTemplate is the panel page, filled in by renderIndex.
const indexTemplate = "panel/index.html"

// renderIndex fills the panel page with the project it shows.
func renderIndex(project string) ([]byte, error) {
	if project == "" {
		return nil, fmt.Errorf("ui: no project")
	}
	tmpl, err := template.ParseFS(files, indexTemplate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, struct{ Project, Name string }{project, filepath.Base(project)})
	return buf.Bytes(), err
}

// serveFile serves one embedded file; directories are not listed, and the
// page's template is served only filled in, at /.
func serveFile(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	data, err := fs.ReadFile(files, name)
	if err != nil || name == indexTemplate {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}
