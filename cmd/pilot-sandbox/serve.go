package main

import (
	"context"
	"flag"
	"sync"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// runServe serves the protocol on stdin/stdout until stdin ends, exit, or a
// signal. stdout carries protocol frames only: logs go to stderr and the log
// file.
func runServe(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	framingFlag := fs.String("framing", string(wire.FramingLSP), "message framing on stdio: lsp (Content-Length headers) or ndjson (one JSON object a line)")
	verbose := fs.Bool("v", false, "log debug messages to stderr too")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	framing, err := wire.ParseFraming(*framingFlag)
	if err != nil {
		fs.Usage()
		return errUsage
	}
	level := zerolog.InfoLevel
	if *verbose {
		level = zerolog.DebugLevel
	}
	a, err := openApp(e.stderr, level)
	if err != nil {
		return err
	}
	defer a.close()
	log, m, docker := a.log, a.m, a.docker
	log.Info().Str("version", version).Str("docker", docker.Endpoint()).Str("framing", string(framing)).Msg("serving on stdio")

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup

	exitCode := -1
	relays := newCarrier(a, "")
	defer relays.Close()
	set := tools.New(m, a.timeline.options()...)
	defer set.Close()
	server := rpc.NewServer(sidecarServices(m, relays, set, a.net, a.tasks, a.recorder, a.timeline), rpc.Info{Name: "pilot-sandbox", Version: version}, log)
	wg.Go(func() { reattachTasks(ctx, a) })
	server.Serve(ctx, wire.NewStream(framing, e.stdin, e.stdout, nil), rpc.ConnOptions{
		OnExit: func(code int) {
			exitCode = code
			cancel()
		},
		// Reconciliation starts once the client gets events, so that what
		// it finds (a sandbox that died, a corrupt state file) reaches it.
		OnSubscribed: func() { wg.Go(func() { m.Run(ctx) }) },
		// Until Run's first look at Docker, a status would miss the
		// sandboxes found running.
		Reconciled: m.Reconciled(),
	})
	cancel()
	wg.Wait()
	log.Info().Int("exit", exitCode).Msg("stopped serving")
	if exitCode > 0 {
		return exitError{code: exitCode}
	}
	return nil
}
