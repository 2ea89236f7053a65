package egress

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// maxMessage bounds one line of the proxy's channel, either way (MAX_LINE
// in proxy.py): a proxy that sends a longer one is ended.
const maxMessage = 64 << 10

// proxyMsg is one line from the proxy (resources/docker/sandbox/pilot-net/
// proxy.py): "ready" or "error" once at its start, then "conn" (judge a
// connection), "dns" (answer a query) and "done" (a connection ended).
type proxyMsg struct {
	T     string `json:"t"`
	ID    uint64 `json:"id"`
	Error string `json:"error"`
	// conn
	Via   string   `json:"via"`  // "transparent" or "http" (the explicit proxy)
	Dst   string   `json:"dst"`  // the address dialed, "" for a name given to the explicit proxy
	Port  int      `json:"port"` // the port dialed
	Src   int      `json:"src"`  // the client's source port
	Kind  string   `json:"kind"` // what its first bytes were: tls, http, ssh, other, more (nothing yet)
	Names []string `json:"names"`
	Of    uint64   `json:"of"` // names that came late, for this connection
	// dns
	Proto string `json:"proto"`
	Q     []byte `json:"q"`
	// done
	Up   int64 `json:"up"`
	Down int64 `json:"down"`
}

// verdict answers a "conn".
type verdict struct {
	ID     uint64   `json:"id"`
	Allow  bool     `json:"allow"`
	Dial   []string `json:"dial,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// dnsReply answers a "dns"; no answer (A empty) leaves the client to time
// out and ask again.
type dnsReply struct {
	ID uint64 `json:"id"`
	A  []byte `json:"a,omitempty"`
}

// channel is the line-JSON conversation with one proxy over its helper's
// stdin and stdout.
type channel struct {
	r   *bufio.Reader
	mu  sync.Mutex // guards writes to w
	w   io.Writer
	err error // the first write error; guarded by mu
}

func newChannel(rw io.ReadWriter) *channel {
	return &channel{r: bufio.NewReaderSize(rw, maxMessage), w: rw}
}

// next reads the proxy's next message.
func (c *channel) next() (proxyMsg, error) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return proxyMsg{}, fmt.Errorf("%w: a line over %d bytes", errProtocol, maxMessage)
	}
	if err != nil {
		return proxyMsg{}, err
	}
	var m proxyMsg
	if err := json.Unmarshal(line, &m); err != nil {
		return proxyMsg{}, fmt.Errorf("%w: %v", errProtocol, err)
	}
	return m, nil
}

// send writes one message; after a failed write it writes nothing more
// (the session is ending).
func (c *channel) send(msg any) {
	line, err := json.Marshal(msg)
	if err != nil || len(line) >= maxMessage {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		_, c.err = c.w.Write(append(line, '\n'))
	}
}
