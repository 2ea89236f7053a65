package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"
)

// resultWriter is a stream that sends a successful reply as one frame it is
// given whole; *Stream is one. jsonrpc2's Conn.Reply marshals a result to a
// raw message, then marshals the response around it, which compacts those
// bytes again at each of three levels, and WriteObject reads the message
// once more for its id: a screenshot's megabyte of base64 was scanned five
// times and copied as many (80% of a tools/call's time in the sidecar). A
// reply written here is marshalled once, into the frame that is sent.
type resultWriter interface {
	writeResult(id jsonrpc2.ID, result any) error
}

var _ resultWriter = (*Stream)(nil)

// writeResult queues the reply to id with result, the same bytes as
// jsonrpc2's Conn.Reply would write.
func (s *Stream) writeResult(id jsonrpc2.ID, result any) error {
	idJSON, err := json.Marshal(id)
	if err != nil {
		return err
	}
	defer s.track(idKey(idJSON), -1) // answered, queued or not
	frame, err := responseFrame(idJSON, result)
	if err != nil {
		return err
	}
	return s.out.put(frame)
}

// responseFrame is a JSON-RPC response as jsonrpc2.Response marshals it:
// the id, the result, then the version. Marshalling the outcome again
// would change nothing: encoding/json's output is compact, its strings
// already escaped as the compaction would escape them. The result is
// encoded straight after the frame's head (an Encoder writes it once into
// the buffer; json.Marshal would copy it out first).
func responseFrame(idJSON []byte, result any) ([]byte, error) {
	const head, middle, tail = `{"id":`, `,"result":`, `,"jsonrpc":"2.0"}`
	var b bytes.Buffer
	b.WriteString(head)
	b.Write(idJSON)
	b.WriteString(middle)
	if err := json.NewEncoder(&b).Encode(result); err != nil {
		return nil, fmt.Errorf("marshal the result: %w", err)
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	// One byte more, for NDJSON's newline (ndjsonFramer.WriteFrame).
	b.Grow(len(tail) + 1)
	b.WriteString(tail)
	return b.Bytes(), nil
}
