package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Stream is a jsonrpc2.ObjectStream over a framer that enforces JSON-RPC 2.0
// before a message reaches the connection. sourcegraph/jsonrpc2 closes the
// connection on any frame it cannot decode and accepts requests without
// "jsonrpc": "2.0"; here a frame that is not JSON gets -32700, one that is
// not a JSON-RPC 2.0 message gets -32600, and the connection goes on.
//
// It also keeps track of the requests read and not yet answered, so that at
// the end of input it answers every one of them before reporting EOF.
//
// What it writes waits in a bounded outbox for the client to take it. A
// client that stops reading is not read from either once the outbox is
// full, and is disconnected when a frame waits too long; so is one whose
// framing is lost. Conn.Wait learns of both through ended and logs why.
type Stream struct {
	framer Framer
	closer io.Closer
	out    *outbox

	mu      sync.Mutex // guards pending, closed and reason
	pending map[string]int
	closed  bool
	reason  error         // why the stream ended the connection itself
	gone    chan struct{} // closed when reason is set
	settled *sync.Cond    // signalled when pending shrinks or the stream ends
}

var _ jsonrpc2.ObjectStream = (*Stream)(nil)

// NewStream returns a stream reading frames from r and writing them to w,
// closing c when it is closed (c may be nil).
func NewStream(f Framing, r io.Reader, w io.Writer, c io.Closer) *Stream {
	return NewFramedStream(NewFramer(f, r, w), c)
}

// NewFramedStream returns a stream over f, closing c when it is closed (c
// may be nil): a transport of its own framing (NewWebSocket).
func NewFramedStream(f Framer, c io.Closer) *Stream {
	return newStream(f, c, stallTimeout)
}

// newStream starts the stream's writer, which runs until the stream is
// closed or ends the connection.
func newStream(f Framer, c io.Closer, stall time.Duration) *Stream {
	s := &Stream{framer: f, closer: c, pending: map[string]int{}, gone: make(chan struct{})}
	s.settled = sync.NewCond(&s.mu)
	s.out = newOutbox(f.WriteFrame, stall, s.end)
	go s.out.run()
	return s
}

// ReadObject reads the next valid JSON-RPC 2.0 message into v, answering and
// skipping the invalid ones.
func (s *Stream) ReadObject(v any) error {
	for {
		if err := s.admit(); err != nil {
			return err
		}
		frame, err := s.framer.ReadFrame()
		var ferr *FrameError
		switch {
		case errors.As(err, &ferr):
			if err := s.answer(nil, ferr.Code, ferr.Message); err != nil {
				return err
			}
			if ferr.Fatal {
				s.waitAnswered()
				s.end(ferr)
				return ferr
			}
			continue
		case err != nil:
			s.waitAnswered()
			return err
		}
		msg, rerr := checkMessage(frame)
		if rerr != nil {
			if err := s.answer(msg.id, rerr.code, rerr.message); err != nil {
				return err
			}
			continue
		}
		// Decode into a zeroed value: a failed attempt must leave nothing behind.
		rv := reflect.ValueOf(v).Elem()
		rv.Set(reflect.Zero(rv.Type()))
		if err := json.Unmarshal(frame, v); err != nil {
			if err := s.answer(msg.id, CodeInvalidRequest, "invalid request: "+err.Error()); err != nil {
				return err
			}
			continue
		}
		if msg.isRequest && msg.id != nil {
			s.track(idKey(msg.id), 1)
		}
		return nil
	}
}

// admit waits, before the next frame is read, while the outbox is full:
// a client that is not reading its answers is not read from either.
func (s *Stream) admit() error {
	if s.isClosed() {
		// jsonrpc2 goes on reading after a close; nothing more is read.
		return io.EOF
	}
	return eofIfClosed(s.out.waitRoom())
}

// WriteObject queues one message as a frame.
func (s *Stream) WriteObject(obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var peek struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(data, &peek) == nil && peek.Method == nil && peek.ID != nil {
		defer s.track(idKey(peek.ID), -1) // answered, queued or not
	}
	return s.out.put(data)
}

// answer answers a message the connection never sees.
func (s *Stream) answer(id json.RawMessage, code int64, message string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc2.Error `json:"error"`
	}{"2.0", id, refusal(code, message)})
	return eofIfClosed(s.out.put(data))
}

// eofIfClosed makes the end of a closed stream's outbox the end of input.
func eofIfClosed(err error) error {
	if errors.Is(err, errStreamClosed) {
		return io.EOF
	}
	return err
}

func (s *Stream) track(key string, delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[key] += delta
	if s.pending[key] <= 0 {
		delete(s.pending, key)
	}
	s.settled.Broadcast()
}

// waitAnswered blocks until every request read has been answered and the
// answers written, or the stream is closed or has ended the connection.
func (s *Stream) waitAnswered() {
	s.mu.Lock()
	for len(s.pending) > 0 && !s.closed && s.reason == nil {
		s.settled.Wait()
	}
	s.mu.Unlock()
	s.out.drain()
}

// Unanswered counts the requests read and not yet answered.
func (s *Stream) Unanswered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, count := range s.pending {
		n += count
	}
	return n
}

// Drain waits until every frame queued has been written, or the stream has
// ended.
func (s *Stream) Drain() { s.out.drain() }

func (s *Stream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// end ends the connection from the stream's side, for reason: the first
// reason counts. What is still queued is dropped.
func (s *Stream) end(reason error) {
	s.mu.Lock()
	if s.reason != nil || s.closed {
		s.mu.Unlock()
		return
	}
	s.reason = reason
	close(s.gone)
	s.settled.Broadcast()
	s.mu.Unlock()
	s.out.end(reason)
}

// ended is closed when the stream has ended the connection itself, for
// endReason.
func (s *Stream) ended() <-chan struct{} { return s.gone }

func (s *Stream) endReason() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Close closes the underlying connection; frames not yet written are dropped.
func (s *Stream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.settled.Broadcast()
	s.mu.Unlock()
	s.out.end(errStreamClosed)
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}

// message is what checkMessage learned of a frame.
type message struct {
	id        json.RawMessage // nil when absent or unusable
	isRequest bool
}

type protocolError struct {
	code    int64
	message string
}

// checkMessage decides whether a frame is a JSON-RPC 2.0 request,
// notification or response, the way the specification defines them.
func checkMessage(frame []byte) (message, *protocolError) {
	var msg message
	if !json.Valid(frame) {
		return msg, &protocolError{CodeParseError, "parse error: the message is not valid JSON"}
	}
	trimmed := bytes.TrimSpace(frame)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return msg, &protocolError{CodeInvalidRequest, "batch requests are not supported"}
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(frame, &env); err != nil {
		return msg, &protocolError{CodeInvalidRequest, "invalid request: a message must be a JSON object"}
	}
	rawID, hasID := env["id"]
	if hasID {
		if !validID(rawID) {
			return msg, &protocolError{CodeInvalidRequest, "invalid request: id must be a string or a non-negative integer"}
		}
		msg.id = rawID
	}
	var version string
	if err := json.Unmarshal(env["jsonrpc"], &version); err != nil || version != "2.0" {
		return msg, &protocolError{CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`}
	}
	rawMethod, hasMethod := env["method"]
	_, hasResult := env["result"]
	_, hasError := env["error"]
	switch {
	case hasMethod:
		var method string
		if err := json.Unmarshal(rawMethod, &method); err != nil || method == "" {
			return msg, &protocolError{CodeInvalidRequest, "invalid request: method must be a non-empty string"}
		}
		if hasResult || hasError {
			return msg, &protocolError{CodeInvalidRequest, "invalid request: a message cannot be both a request and a response"}
		}
		msg.isRequest = true
	case (hasResult != hasError) && hasID:
		// a response to a call the server made
	default:
		return msg, &protocolError{CodeInvalidRequest, "invalid request: neither a request nor a response"}
	}
	return msg, nil
}
