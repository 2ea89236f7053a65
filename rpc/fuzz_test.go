package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/args/argstest"
)

// The fuzz tests' seed corpora are in testdata/fuzz/<name>/ (valid and
// broken requests, ids at the limits, batches, deep nesting, bad UTF-8,
// exit and cancel notifications, bad Content-Length headers). go test runs
// the seeds every time; go test -fuzz=<name> -fuzztime=1m ./rpc searches
// further, and a crasher it finds is added there.

// probe is a request sent after the fuzzer's input.
const probe = `{"jsonrpc":"2.0","id":"probe-5f1d","method":"docker/status"}`

// FuzzNDJSON checks that whatever lines come first, the server keeps
// answering with well-formed messages, and a valid request sent after them
// is answered (unless they held an exit notification, after which nothing
// is read). The input ends, so the server must also stop: a wedged
// connection fails the test.
func FuzzNDJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, garbage []byte) {
		input := append(append(bytes.Clone(garbage), '\n'), probe+"\n"...)
		out := serveInput(t, FramingNDJSON, input)
		out.check(t, true)
	})
}

// FuzzLSPBody is FuzzNDJSON for LSP framing: any bytes as the body of one
// well-framed message, then the probe.
func FuzzLSPBody(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		input := append(lspFrame(body), lspFrame([]byte(probe))...)
		out := serveInput(t, FramingLSP, input)
		out.check(t, true)
	})
}

// FuzzLSPStream gives the LSP reader arbitrary bytes, headers included.
// A bad Content-Length can swallow what follows, so the probe cannot be
// required; what is checked is that the server neither crashes nor wedges,
// and writes nothing but well-formed frames.
func FuzzLSPStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		out := serveInput(t, FramingLSP, data)
		out.check(t, false)
	})
}

// FuzzDecodeParams decodes arbitrary params with every method's decoder.
// It must accept what jsonschema-go's validator accepts of the method's
// params schema, and refuse the rest with an *args.Error naming the field
// (argstest.Agree); an accepted value must survive encoding and decoding
// again unchanged.
func FuzzDecodeParams(f *testing.F) {
	s := newTestServer(newFakeService(), Info{}, zerolog.Nop())
	schemas := map[string]*jsonschema.Resolved{}
	for _, m := range s.table {
		schemas[m.name] = argstest.Resolve(f, m.params)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, m := range s.table {
			checkDecode(t, m, schemas[m.name], raw)
		}
	})
}

func checkDecode(t *testing.T, m method, schema *jsonschema.Resolved, raw []byte) {
	argstest.Agree(t, schema, func(raw []byte) error { _, err := m.decode(raw); return err }, raw)
	v, err := m.decode(raw)
	if err != nil {
		return
	}
	once, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %q: decoded value does not encode: %v", m.name, raw, err)
	}
	w, err := m.decode(once)
	if err != nil {
		t.Fatalf("%s: %q: its own encoding %s is refused: %v", m.name, raw, once, err)
	}
	if twice, _ := json.Marshal(w); !bytes.Equal(once, twice) {
		t.Fatalf("%s: %q: %s decodes to %s", m.name, raw, once, twice)
	}
}

func lspFrame(body []byte) []byte {
	return append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...)
}

// served is what the server wrote for one input.
type served struct {
	framing Framing
	out     []byte
	exited  bool
}

// serveInput serves one input to the end and returns what was written.
func serveInput(t *testing.T, framing Framing, input []byte) served {
	var (
		mu  sync.Mutex // guards out and exited
		res = served{framing: framing}
	)
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		res.out = append(res.out, p...)
		return len(p), nil
	})
	s := newTestServer(newFakeService(), Info{Name: "pilot-sandbox", Version: "fuzz"}, zerolog.Nop())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(context.Background(), NewStream(framing, bytes.NewReader(input), w, nil), ConnOptions{
			OnExit: func(int) { mu.Lock(); res.exited = true; mu.Unlock() },
		})
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the server is wedged: input %q was not done with", input)
	}
	mu.Lock()
	defer mu.Unlock()
	return res
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// check parses every frame written: each must be one JSON-RPC 2.0
// response, with data.kind on errors, or a notification. With wantProbe,
// the probe must have been answered, unless an exit came first.
func (r served) check(t *testing.T, wantProbe bool) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(r.out))
	answered := false
	for {
		body, err := nextFrame(r.framing, br)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("bad frame in the output: %v\n%q", err, r.out)
		}
		id := checkOutgoing(t, body)
		answered = answered || id == `"probe-5f1d"`
	}
	if wantProbe && !answered && !r.exited {
		t.Fatalf("the probe was not answered; output:\n%s", r.out)
	}
}

func nextFrame(f Framing, br *bufio.Reader) ([]byte, error) {
	if f == FramingNDJSON {
		line, err := br.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("unterminated line %q", line)
		}
		return line[:len(line)-1], nil
	}
	header, err := br.ReadString('\n')
	if err == io.EOF && header == "" {
		return nil, io.EOF
	}
	var n int
	if _, err := fmt.Sscanf(header, "Content-Length: %d\r\n", &n); err != nil {
		return nil, fmt.Errorf("bad header %q", header)
	}
	if blank, _ := br.ReadString('\n'); blank != "\r\n" {
		return nil, fmt.Errorf("no blank line after %q", header)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, fmt.Errorf("short body")
	}
	return body, nil
}

// checkOutgoing checks one message the server sent and returns its id.
func checkOutgoing(t *testing.T, body []byte) string {
	t.Helper()
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Kind string `json:"kind"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" {
		t.Fatalf("not a JSON-RPC 2.0 message: %q", body)
	}
	switch {
	case m.Method != nil:
		if m.ID != nil {
			t.Fatalf("the server sent a request: %s", body)
		}
	case m.ID == nil:
		t.Fatalf("a response without id: %s", body)
	case m.Error != nil:
		if kind := errorTable[m.Error.Code].kind; kind == "" || m.Error.Data.Kind != kind || m.Error.Message == "" {
			t.Fatalf("an error without its kind or message: %s", body)
		}
	case !strings.Contains(string(body), `"result"`):
		t.Fatalf("a response with neither result nor error: %s", body)
	}
	return string(m.ID)
}
