package main

import (
	"context"
	"flag"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/mcpserver"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// runMCP serves the project's agent tools over MCP on stdin/stdout until
// the client goes away or a signal. stdout carries the protocol only: logs
// go to stderr and the log file.
func runMCP(ctx context.Context, e *env, args []string) error {
	opts, err := parseMCPFlags(e, args)
	if err != nil {
		return err
	}
	a, err := openApp(e.stderr, opts.level)
	if err != nil {
		return err
	}
	defer a.close()
	project := opts.project
	if opts.enable {
		if _, err := a.m.SetToolsEnabled(project, true); err != nil {
			return err
		}
	}
	a.log.Info().Str("version", version).Str("project", project).Str("docker", a.docker.Endpoint()).Msg("serving MCP on stdio")

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Follow Docker, so that what the app, the panel, the CLI or another
	// MCP server does to the sandbox shows here.
	wg.Go(func() { a.m.Run(ctx) })
	relays := newCarrier(a, project)
	defer relays.Close()
	set := tools.New(a.m, a.timeline.options()...)
	server := mcpserver.New(set, a.m, mcpserver.Options{Project: project, Version: version, Log: a.log, Questions: a.net.broker})
	err = server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}})
	// The client is gone: calls it left running in the background end too.
	set.Close()
	cancel()
	wg.Wait()
	a.log.Info().Err(err).Msg("stopped serving MCP")
	return err
}

// nopWriteCloser leaves stdout open when the transport closes: it is the
// process's.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpOptions are the mcp command's flags, checked.
type mcpOptions struct {
	project string // canonical
	enable  bool
	level   zerolog.Level
}

func parseMCPFlags(e *env, args []string) (mcpOptions, error) {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	projectFlag := fs.String("project", ".", "the project directory")
	enable := fs.Bool("enable-tools", false, "turn the project's agent tools on (dockerToolsEnabled in .pilot/settings.json)")
	verbose := fs.Bool("v", false, "log debug messages to stderr too")
	if err := parseFlags(e, fs, args); err != nil {
		return mcpOptions{}, err
	}
	opts := mcpOptions{enable: *enable, level: zerolog.InfoLevel}
	if *verbose {
		opts.level = zerolog.DebugLevel
	}
	abs, err := absProject(*projectFlag)
	if err != nil {
		return opts, err
	}
	opts.project, err = projectfs.Canonical(abs)
	return opts, err
}
