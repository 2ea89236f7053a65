package tools_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// shotSandbox is a sandbox whose desktop answers every screenshot with the
// same PNG, so that a benchmark measures the sidecar's path alone.
type shotSandbox struct{ shot desktop.Screenshot }

func (s shotSandbox) Start(context.Context, string) (service.State, error) {
	return service.State{}, nil
}
func (s shotSandbox) Stop(context.Context, string) (service.State, error) {
	return service.State{}, nil
}
func (s shotSandbox) Exec(context.Context, string, service.ExecRequest) (service.ExecOutput, error) {
	return service.ExecOutput{}, nil
}
func (s shotSandbox) ExecArgv(context.Context, string, service.ExecSpec) (service.ExecResult, error) {
	return service.ExecResult{}, nil
}
func (s shotSandbox) Desktop(context.Context, string) (tools.Desktop, error) {
	return shotDesktop(s), nil
}

type shotDesktop struct{ shot desktop.Screenshot }

func (d shotDesktop) Display() desktop.Display {
	return desktop.Display{Width: d.shot.Width, Height: d.shot.Height}
}
func (shotDesktop) Pointer(context.Context) (image.Point, error)                   { return image.Point{}, nil }
func (shotDesktop) Move(context.Context, int, int) error                           { return nil }
func (shotDesktop) Click(context.Context, int, int, int, int, ...string) error     { return nil }
func (shotDesktop) Drag(context.Context, desktop.Drag) error                       { return nil }
func (shotDesktop) Scroll(context.Context, int, int, string, int, ...string) error { return nil }
func (shotDesktop) Type(context.Context, string) error                             { return nil }
func (shotDesktop) TypeInto(context.Context, string, string) error                 { return nil }
func (shotDesktop) Keys(context.Context, string) error                             { return nil }
func (shotDesktop) HoldKeys(context.Context, string, time.Duration) error          { return nil }
func (d shotDesktop) Screenshot(context.Context) (desktop.Screenshot, error)       { return d.shot, nil }
func (shotDesktop) Clipboard(context.Context) (string, bool, error)                { return "", true, nil }
func (shotDesktop) SetClipboard(context.Context, string) error                     { return nil }
func (d shotDesktop) ScreenshotRegion(context.Context, image.Rectangle) (desktop.Screenshot, error) {
	return d.shot, nil
}
func (shotDesktop) Tree(context.Context) (desktop.Tree, error) { return desktop.Tree{}, nil }
func (shotDesktop) Locate(context.Context, string) (desktop.Element, error) {
	return desktop.Element{}, nil
}
func (shotDesktop) Focus(context.Context, string) (desktop.Element, error) {
	return desktop.Element{}, nil
}
func (shotDesktop) Mark(context.Context) error { return nil }
func (shotDesktop) Settle(context.Context, time.Duration, time.Duration, time.Duration) (desktop.Change, error) {
	return desktop.Change{}, nil
}
func (shotDesktop) Still(context.Context, time.Duration, time.Duration) (desktop.Stillness, error) {
	return desktop.Stillness{}, nil
}

// textScreen is a 1280x800 PNG like a screen of terminals: a dark
// background with lines of coloured glyph-like dots, compressed as the
// agent does (zlib level 1), which makes it about as large as a busy
// desktop's (a megabyte or so).
func textScreen(tb testing.TB) desktop.Screenshot {
	const w, h = 1280, 800
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	palette := []color.RGBA{{230, 230, 230, 255}, {80, 160, 255, 255}, {120, 220, 120, 255}, {255, 200, 80, 255}}
	for y := range h {
		for x := range w {
			c := color.RGBA{24, 24, 32, 255}
			if y%16 < 12 && rng.IntN(3) == 0 {
				c = palette[(x/64+y/16)%len(palette)]
				c.R -= uint8(rng.IntN(40))
			}
			img.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return desktop.Screenshot{PNG: b.Bytes(), Width: w, Height: h}
}

// BenchmarkScreenshotInProcess is sandbox_screenshot through tools/call on
// an in-memory pipe, NDJSON as the benchmark's client reads it, with a
// desktop that answers at once with a ~1 MB PNG: the sidecar's own part of
// a screenshot (dispatch, the result, its JSON, the frame), no Docker.
func BenchmarkScreenshotInProcess(b *testing.B) {
	shot := textScreen(b)
	server, client := net.Pipe()
	s := rpc.NewServer(rpc.Services{ToolAccess: toolsOnService{}, Tools: tools.For(shotSandbox{shot}), Events: toolsOnService{}}, rpc.Info{Name: "bench", Version: "0"}, zerolog.Nop())
	done := make(chan struct{})
	go func() {
		s.Serve(context.Background(), wire.NewStream(wire.FramingNDJSON, server, server, server), rpc.ConnOptions{})
		close(done)
	}()
	b.Cleanup(func() { client.Close(); <-done })
	r := bufio.NewReaderSize(client, 64<<10)
	b.SetBytes(int64(len(shot.PNG)))
	for i := 0; b.Loop(); i++ {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"projectPath":"/","name":"sandbox_screenshot","arguments":{}}}`+"\n", i)
		if _, err := client.Write([]byte(req)); err != nil {
			b.Fatal(err)
		}
		line, err := r.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			line, err = r.ReadSlice('\n')
		}
		if err != nil || !bytes.HasSuffix(line, []byte(`"isError":false},"jsonrpc":"2.0"}`+"\n")) {
			b.Fatalf("%v: ...%q", err, line[max(0, len(line)-200):])
		}
	}
}

// toolsOnService is a service whose every project has its agent tools on:
// all tools/call asks of it.
type toolsOnService struct{}

func (toolsOnService) ToolsEnabled(string) (bool, error) { return true, nil }
func (toolsOnService) Touch(string)                      {}
func (toolsOnService) Subscribe() (<-chan service.Event, func()) {
	return make(chan service.Event), func() {}
}
