package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BenchmarkServersAlone measures what each server adds to a click and to a
// screenshot, on a fake sandbox whose desktop answers at once: JSON-RPC's tools/call against
// MCP's, each over an in-memory pipe with the same line client. (Most of
// MCP's extra is the SDK's JSON decoding: about 50 KB allocated per
// message by segmentio/encoding's Decoder, which it uses.)
func BenchmarkServersAlone(b *testing.B) {
	b.Run("click", func(b *testing.B) { benchServers(b, `"name":"sandbox_click","arguments":{"x":1,"y":2}`) })
	// A 1280x800 screenshot of grey noise, a PNG of about 1 MB.
	b.Run("screenshot", func(b *testing.B) { benchServers(b, `"name":"sandbox_screenshot","arguments":{}`) })
}

// benchServers measures one tools/call, name and arguments given as call's
// members, through each server.
func benchServers(b *testing.B, call string) {
	s := newServed(b, true)
	s.fake.running = true
	s.fake.display = desktop.Display{Width: 1280, Height: 800}
	s.fake.shot = noisePNG(b, s.fake.display)
	b.Run("serve", func(b *testing.B) {
		srv := rpc.NewServer(switchOnly{}, nil, s.set, rpc.Info{Name: "bench", Version: "0"}, zerolog.Nop())
		c := pipe(b, func(ctx context.Context, conn net.Conn) {
			srv.Serve(ctx, rpc.NewStream(rpc.FramingNDJSON, conn, conn, conn), rpc.ConnOptions{})
		})
		for b.Loop() {
			c.call(b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"projectPath":"`+s.project+`",`+call+`}}`)
		}
	})
	b.Run("mcp", func(b *testing.B) {
		c := pipe(b, func(ctx context.Context, conn net.Conn) {
			s.server.Run(ctx, &mcp.IOTransport{Reader: conn, Writer: conn})
		})
		c.call(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`)
		c.conn.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
		for b.Loop() {
			c.call(b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+call+`}}`)
		}
	})
}

// switchOnly is the part of rpc.Service a tools/call uses; the rest is
// never called here.
type switchOnly struct{ rpc.Service }

func (switchOnly) ToolsEnabled(p string) (bool, error) { return fileSwitch{}.ToolsEnabled(p) }

func (switchOnly) Touch(string) {}

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
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(line, &resp) == nil && resp.ID == 1 {
			if resp.Result == nil || bytes.Contains(resp.Result, []byte(`"isError":true`)) {
				b.Fatalf("%.300s", line)
			}
			return
		}
	}
}

// noisePNG is a PNG of random grey pixels, which deflate cannot shrink.
func noisePNG(b *testing.B, d desktop.Display) []byte {
	img := image.NewGray(image.Rect(0, 0, d.Width, d.Height))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.Uint32())
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		b.Fatal(err)
	}
	return out.Bytes()
}
