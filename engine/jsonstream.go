package engine

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"io"
)

// withJSONStream runs call, which writes the engine's stream of JSON
// messages (a build's or a pull's output) to the writer it is given, and
// decodes the stream as it comes (decodeStream). It returns call's error
// and the last error a message reported. The engine answers 200 and
// reports a failure inside the stream, so both matter.
func withJSONStream[M any](call func(out io.Writer) error, handle func(M) error) (callErr, streamErr error) {
	pr, pw := io.Pipe()
	decoded := make(chan error, 1)
	go func() { decoded <- decodeStream(pr, handle) }()
	callErr = call(pw)
	pw.CloseWithError(callErr)
	return callErr, <-decoded
}

// decodeStream gives each JSON message of r to handle and returns the last
// error handle returned (a message that reports a failure), else one the
// stream could not be decoded for. It reads to the end so that the writer
// never blocks.
func decodeStream[M any](r io.Reader, handle func(M) error) error {
	var reported error
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var msg M
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return reported
			}
			io.Copy(io.Discard, r)
			return cmp.Or(reported, err)
		}
		if err := handle(msg); err != nil {
			reported = err
		}
	}
}
