// Command wsserver serves the JSON-RPC protocol over the rpc package's
// WebSocket transport, on the real sandbox manager, for the tests of the
// ui/ client's WebSocket side. (`pilot-sandbox ui`, which will serve the
// sandbox panel with the same transport, comes later; this is not it.)
//
//	wsserver [-origin http://127.0.0.1:PORT]...
//
// It listens on a free port of 127.0.0.1, prints
// ws://127.0.0.1:PORT/rpc?token=T as the first line of stdout, and serves
// until its stdin ends or it gets SIGINT or SIGTERM. Logs go to stderr; the
// state directory is XDG_STATE_HOME's, as for pilot-sandbox.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/adrg/xdg"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

type origins []string

func (o *origins) String() string     { return strings.Join(*o, ",") }
func (o *origins) Set(v string) error { *o = append(*o, v); return nil }

func main() {
	var allowed origins
	flag.Var(&allowed, "origin", "an Origin allowed to connect (repeatable)")
	flag.Parse()
	if err := run(allowed); err != nil {
		fmt.Fprintln(os.Stderr, "wsserver:", err)
		os.Exit(1)
	}
}

func run(allowed origins) error {
	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, NoColor: true}).With().Timestamp().Logger()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { io.Copy(io.Discard, os.Stdin); stop() }()

	cfg := service.Config{
		Image:     os.Getenv("PILOT_IMAGE"),
		Resources: resources.SandboxImage(),
		Agent:     resources.DesktopAgent(),
		StateDir:  filepath.Join(xdg.StateHome, "pilot-sandbox"),
		Logger:    log,
	}
	if base := os.Getenv("PILOT_BASE_IMAGE"); base != "" {
		cfg.BuildArgs = map[string]string{"BASE_IMAGE": base}
	}
	m, err := service.New(engine.New(""), cfg)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { m.Run(ctx) })

	secret := make([]byte, 16)
	rand.Read(secret)
	token := hex.EncodeToString(secret)
	server := rpc.NewServer(m, tools.New(m), rpc.Info{Name: "pilot-sandbox", Version: "wsserver"}, log)
	handler, err := server.WebSocketHandler(rpc.WebSocketOptions{Token: token, Origins: allowed})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/rpc", handler)
	srv := &http.Server{Handler: mux, BaseContext: func(net.Listener) context.Context { return ctx }}
	fmt.Printf("ws://%s/rpc?token=%s\n", ln.Addr(), token)
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
