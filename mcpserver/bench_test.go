package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/mcpserver"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// lineClient speaks NDJSON to a server on an in-memory pipe: the same
// client for both servers, so that what differs is the server.
type lineClient struct {
	b    *testing.B
	conn net.Conn
	r    *bufio.Reader
	next int
}

// call sends a request and returns its result, skipping notifications.
func (c *lineClient) call(method string, params any) json.RawMessage {
	c.next++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if _, err := c.conn.Write(append(req, '\n')); err != nil {
		c.b.Fatal(err)
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.b.Fatal(err)
		}
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		json.Unmarshal(line, &resp)
		if resp.ID == c.next {
			if resp.Result == nil || bytes.Contains(resp.Result, []byte(`"isError":true`)) {
				c.b.Fatalf("%s: %s", method, line)
			}
			return resp.Result
		}
	}
}

func (c *lineClient) notify(method string) {
	c.conn.Write([]byte(`{"jsonrpc":"2.0","method":"` + method + `"}` + "\n"))
}

// serve starts a server on one end of a pipe until the benchmark ends, and
// returns a client on the other.
func serve(b *testing.B, run func(ctx context.Context, conn net.Conn)) *lineClient {
	server, client := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { run(ctx, server); close(done) }()
	b.Cleanup(func() { cancel(); client.Close(); server.Close(); <-done })
	return &lineClient{b: b, conn: client, r: bufio.NewReader(client)}
}

// BenchmarkRoundTrip measures a click and a screenshot on one real sandbox,
// through tools/call over JSON-RPC (what `pilot-sandbox serve` runs)
// against the same call over MCP (what `pilot-sandbox mcp` runs): ns/op is
// the pair, serve-µs/op and mcp-µs/op each, mcp-extra-µs/op the
// difference.
func BenchmarkRoundTrip(b *testing.B) {
	m, docker := dockertest.Manager(b, func(c *service.Config) { c.Logger = zerolog.Nop() })
	project := dockertest.Project(b, docker)
	os.MkdirAll(filepath.Join(project, ".pilot"), 0o755)
	os.WriteFile(filepath.Join(project, ".pilot", "settings.json"), []byte(`{"dockerToolsEnabled": true}`), 0o644)
	if _, err := m.Start(context.Background(), project); err != nil {
		b.Fatal(err)
	}
	set := tools.New(m)
	b.Cleanup(set.Close)

	relays := ports.NewCarrier(m, docker, ports.Options{Log: zerolog.Nop()})
	b.Cleanup(relays.Close)
	rpcServer := rpc.NewServer(m, relays, set, rpc.Info{Name: "bench", Version: "0"}, zerolog.Nop())
	serveClient := serve(b, func(ctx context.Context, conn net.Conn) {
		rpcServer.Serve(ctx, rpc.NewStream(rpc.FramingNDJSON, conn, conn, conn), rpc.ConnOptions{})
	})
	viaServe := func(name string, args any) {
		serveClient.call("tools/call", map[string]any{"projectPath": project, "name": name, "arguments": args})
	}

	mcpServer := mcpserver.New(set, m, mcpserver.Options{Project: project, Version: "0", Log: zerolog.Nop()})
	mcpClient := serve(b, func(ctx context.Context, conn net.Conn) {
		mcpServer.Run(ctx, &mcp.IOTransport{Reader: conn, Writer: conn})
	})
	mcpClient.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench", "version": "0"}})
	mcpClient.notify("notifications/initialized")
	viaMCP := func(name string, args any) {
		mcpClient.call("tools/call", map[string]any{"name": name, "arguments": args})
	}

	viaServe("sandbox_hover", map[string]any{"x": 0, "y": 0}) // start the desktop agent
	for _, action := range []struct {
		name string
		args func(i int) any
	}{
		{"sandbox_click", func(i int) any { return map[string]any{"x": 600 + i%2, "y": 300} }},
		{"sandbox_screenshot", func(int) any { return map[string]any{} }},
	} {
		// The two calls alternate, each timed on its own, so that the load
		// of a shared machine weighs on both alike.
		b.Run(action.name, func(b *testing.B) {
			serveClient.b, mcpClient.b = b, b
			var overServe, overMCP time.Duration
			i := 0
			for b.Loop() {
				i++
				start := time.Now()
				viaServe(action.name, action.args(i))
				mid := time.Now()
				viaMCP(action.name, action.args(i))
				overServe, overMCP = overServe+mid.Sub(start), overMCP+time.Since(mid)
			}
			n := float64(b.N)
			b.ReportMetric(float64(overServe.Microseconds())/n, "serve-µs/op")
			b.ReportMetric(float64(overMCP.Microseconds())/n, "mcp-µs/op")
			b.ReportMetric(float64((overMCP-overServe).Microseconds())/n, "mcp-extra-µs/op")
		})
	}
}
