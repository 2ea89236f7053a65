package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
	"github.com/pilot-sandbox/pilot-sandbox/ui"
)

// runUI serves the sandbox panel and its WebSocket on 127.0.0.1 until a
// signal. The first line of stdout is the panel's address with its token
// (docs/protocol.md, Transports); nothing else goes to stdout.
func runUI(ctx context.Context, e *env, args []string) error {
	opts, err := parseUIFlags(e, args)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	a, err := openApp(e.stderr, opts.level)
	if err != nil {
		return err
	}
	defer a.close()
	token, err := newToken()
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	handler, err := panelHandler(a, opts.project, port, token)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.m.Run(ctx) })
	wg.Go(func() { reattachTasks(ctx, a) })

	address := fmt.Sprintf("http://127.0.0.1:%d/#token=%s", port, token)
	fmt.Fprintln(e.stdout, address)
	a.log.Info().Str("project", opts.project).Str("docker", a.docker.Endpoint()).Int("port", port).Msg("serving the sandbox panel")
	if opts.open {
		wg.Go(func() { openPanel(ctx, a.log, address) })
	}
	return serveUntilDone(ctx, ln, handler)
}

// uiOptions are the ui command's flags, checked.
type uiOptions struct {
	addr    string // a 127.0.0.1 address to listen on
	project string // canonical
	level   zerolog.Level
	open    bool
}

func parseUIFlags(e *env, args []string) (uiOptions, error) {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	projectFlag := fs.String("project", ".", "the project directory")
	listen := fs.String("listen", "127.0.0.1:0", "the address to serve on: a port of 127.0.0.1 (0 picks a free one)")
	noOpen := fs.Bool("no-open", false, "do not open the panel in a browser")
	verbose := fs.Bool("v", false, "log debug messages to stderr too")
	if err := parseFlags(e, fs, args); err != nil {
		return uiOptions{}, err
	}
	opts := uiOptions{level: zerolog.InfoLevel, open: !*noOpen}
	if *verbose {
		opts.level = zerolog.DebugLevel
	}
	var err error
	if opts.addr, err = loopbackAddr(*listen); err != nil {
		return opts, err
	}
	abs, err := absProject(*projectFlag)
	if err != nil {
		return opts, err
	}
	opts.project, err = projectfs.Canonical(abs)
	return opts, err
}

// panelHandler joins the panel's files and the JSON-RPC WebSocket, which
// accepts the token and pages from the panel's own origin only.
func panelHandler(a *app, project string, port int, token string) (http.Handler, error) {
	m := a.m
	// The relays last as long as this process.
	server := rpc.NewServer(sidecarServices(m, newCarrier(a, ""), tools.New(m, a.timeline.options()...), a.net, a.tasks, a.recorder, a.timeline), rpc.Info{Name: "pilot-sandbox", Version: version}, a.log)
	ws, err := server.WebSocketHandler(rpc.WebSocketOptions{
		Token: token,
		Origins: []string{
			fmt.Sprintf("http://127.0.0.1:%d", port),
			fmt.Sprintf("http://localhost:%d", port),
		},
		Reconciled: m.Reconciled(),
	})
	if err != nil {
		return nil, err
	}
	return ui.Handler(ui.Options{Project: project, Port: port, RPC: ws, Token: token,
		Recording: func(id string) (io.ReadSeekCloser, time.Time, error) { return a.recorder.Open(id, project) }})
}

// serveUntilDone serves until ctx ends, then closes every connection:
// WebSocket sessions end with the server's base context.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	stopped := context.AfterFunc(ctx, func() { srv.Close() })
	defer stopped()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loopbackAddr checks --listen: the panel hands out the desktop's
// passwords, so it serves on 127.0.0.1 only. "8080" and ":8080" mean
// 127.0.0.1:8080.
func loopbackAddr(listen string) (string, error) {
	if _, err := strconv.ParseUint(listen, 10, 16); err == nil {
		listen = ":" + listen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--listen %q: want 127.0.0.1:PORT or PORT", listen)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("--listen %q: %q is not a port number", listen, port)
	}
	switch host {
	case "", "127.0.0.1", "localhost":
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	return "", fmt.Errorf("--listen %q: the panel serves on 127.0.0.1 only, as it hands out the desktop's passwords", listen)
}

// newToken is the per-process secret of the WebSocket (128 bits).
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
