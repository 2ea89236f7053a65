package rpc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/args"
)

// BenchmarkServe measures the cost of one request through the whole
// server (framing, validation, dispatch, strict params, reply) with the
// fake service: b.N requests are read from one input and all answered.
func BenchmarkServe(b *testing.B) {
	for _, framing := range []Framing{FramingNDJSON, FramingLSP} {
		b.Run(string(framing), func(b *testing.B) {
			var input bytes.Buffer
			for i := range b.N {
				msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"sandbox/getToolsEnabled","params":{"projectPath":"/"}}`, i)
				if framing == FramingLSP {
					input.Write(lspFrame([]byte(msg)))
				} else {
					input.WriteString(msg + "\n")
				}
			}
			s := newTestServer(newFakeService(), Info{}, zerolog.Nop())
			b.ResetTimer()
			s.Serve(context.Background(), NewStream(framing, &input, io.Discard, nil), ConnOptions{})
		})
	}
}

// BenchmarkDecodeParams measures strict params decoding alone.
func BenchmarkDecodeParams(b *testing.B) {
	raw := []byte(`{"projectPath":"/home/me/project","command":"ls -la","timeoutMs":5000,"workdir":"/tmp"}`)
	spec := args.For[execParams]()
	for b.Loop() {
		if _, err := spec.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}
