// Package wire carries the sidecar's JSON-RPC 2.0 messages
// (docs/protocol.md, Transports, and Limits) and fills in what
// github.com/sourcegraph/jsonrpc2, which routes them, does not do, or does
// in a way the protocol cannot have. It knows no method: package rpc
// decides what each one does and what its errors mean.
//
// What it works around in sourcegraph/jsonrpc2, each where it is decided:
//
//   - jsonrpc2.Conn closes the connection on a frame it cannot decode, and
//     takes a request without "jsonrpc": "2.0" or with an id it cannot echo
//     back. Stream.ReadObject checks every frame first (checkMessage, in
//     stream.go; validID, in ids.go) and answers a bad one itself, -32700 or
//     -32600 with id null, and the connection goes on.
//   - Its framing reads a message of any size. The framers (frames.go,
//     websocket.go) bound a message, and read past one that is too large.
//   - It writes each message under a lock, straight to the stream: a
//     client that stops reading holds up every writer, and what each
//     holds, without bound. The outbox (outbox.go) holds at most
//     maxQueuedBytes, stops reading a client that does not read, and ends
//     the connection of one that stopped.
//   - At the end of input it closes the connection while calls still run:
//     Stream reports EOF only once every request read has been answered
//     (Stream.waitAnswered).
//   - Conn.Reply marshals a result, then the response around it, then the
//     stream reads it again for its id: a screenshot's megabyte of base64
//     was scanned five times. Conn.Reply here writes a success as one
//     frame, marshalled once (reply.go).
//   - It runs a handler in its read loop, or, with AsyncHandler, in
//     goroutines without bound. Conn.Go runs each call in a goroutine of
//     its own within the bounds of admission.go.
//   - It cannot cancel a request: Conn.Begin and Conn.Cancel keep the calls
//     running by id, for $/cancelRequest (cancel.go).
//   - jsonrpc2.NewConn reads, and dispatches, before it returns the
//     connection: Conn learns it from the first message's dispatch
//     (conn.go).
//
// The limits (docs/protocol.md, Limits) are all here: MaxFrameBytes and
// the LSP header's (frames.go), what waits for a client (outbox.go), the
// calls a connection runs (admission.go), an error's message
// (MaxErrorMessageBytes).
package wire

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"
)

// The errors the stream answers by itself, JSON-RPC 2.0's, and their kinds
// (docs/protocol.md, Errors): rpc's error table lists them with the rest.
const (
	CodeParseError     int64 = -32700
	CodeInvalidRequest int64 = -32600

	KindParseError     = "parse_error"
	KindInvalidRequest = "invalid_request"
)

// refusal is the error answering a frame the connection never sees, with
// data.kind as every error of the protocol has it.
func refusal(code int64, message string) *jsonrpc2.Error {
	kind := KindInvalidRequest
	if code == CodeParseError {
		kind = KindParseError
	}
	raw, _ := json.Marshal(struct {
		Kind string `json:"kind"`
	}{kind})
	data := json.RawMessage(raw)
	return &jsonrpc2.Error{Code: code, Message: message, Data: &data}
}

// MaxErrorMessageBytes bounds an error's message in a reply and in the log:
// one that quotes what the client sent (a 30 MB projectPath made a 63 MB
// reply, and ten of them a 692 MB log) must not come back, or be logged,
// whole.
const MaxErrorMessageBytes = 4 << 10

// Bounded returns e with its message cut to MaxErrorMessageBytes.
func Bounded(e *jsonrpc2.Error) *jsonrpc2.Error {
	if len(e.Message) <= MaxErrorMessageBytes {
		return e
	}
	cut := *e // e may be the caller's own error
	cut.Message = truncate(e.Message, MaxErrorMessageBytes)
	return &cut
}

// truncate cuts s to at most n bytes, at a character boundary, and marks
// the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
