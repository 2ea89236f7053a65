package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkServersAlone measures what each server adds to a click, on a
// fake sandbox whose click costs nothing: JSON-RPC's tools/call against
// MCP's, each over an in-memory pipe with the same line client. (Most of
// MCP's extra is the SDK's JSON decoding: about 50 KB allocated per
// message by segmentio/encoding's Decoder, which it uses.)
func BenchmarkServersAlone(b *testing.B) {
	s := newServed(b, true)
	s.fake.running = true
	click := `"name":"sandbox_click","arguments":{"x":1,"y":2}`
	b.Run("serve", func(b *testing.B) {
		srv := rpc.NewServer(switchOnly{}, s.set, rpc.Info{Name: "bench", Version: "0"}, zerolog.Nop())
		c := pipe(b, func(ctx context.Context, conn net.Conn) {
			srv.Serve(ctx, rpc.NewStream(rpc.FramingNDJSON, conn, conn, conn), rpc.ConnOptions{})
		})
		for b.Loop() {
			c.call(b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"projectPath":"`+s.project+`",`+click+`}}`)
		}
	})
	b.Run("mcp", func(b *testing.B) {
		c := pipe(b, func(ctx context.Context, conn net.Conn) {
			s.server.Run(ctx, &mcp.IOTransport{Reader: conn, Writer: conn})
		})
		c.call(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`)
		c.conn.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
		for b.Loop() {
			c.call(b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+click+`}}`)
		}
	})
}

// switchOnly is the part of rpc.Service a tools/call uses; the rest is
// never called here.
type switchOnly struct{ rpc.Service }

func (switchOnly) ToolsEnabled(p string) (bool, error) { return fileSwitch{}.ToolsEnabled(p) }

func (switchOnly) Subscribe() (<-chan service.Event, func()) {
	return make(chan service.Event), func() {}
}

type pipeClient struct {
	conn net.Conn
	r    *bufio.Reader
}

func pipe(b *testing.B, run func(ctx context.Context, conn net.Conn)) *pipeClient {
	server, client := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { run(ctx, server); close(done) }()
	b.Cleanup(func() { cancel(); client.Close(); server.Close(); <-done })
	return &pipeClient{conn: client, r: bufio.NewReader(client)}
}

// call sends a request with id 1 and reads until its response.
func (c *pipeClient) call(b *testing.B, req string) {
	if _, err := c.conn.Write([]byte(req + "\n")); err != nil {
		b.Fatal(err)
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		var resp struct {
			ID int `json:"id"`
		}
		if json.Unmarshal(line, &resp) == nil && resp.ID == 1 {
			return
		}
	}
}
