package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"
)

// Bounds of what the gateway reads of a response for its usage; the
// response itself goes through whole.
const (
	// maxEventLine bounds one line of server-sent events that is parsed;
	// a longer one (a large text delta) carries no usage and is skipped.
	maxEventLine = 1 << 20
	// maxJSONBody bounds a JSON response that is parsed (a list of
	// models, a whole message).
	maxJSONBody = 8 << 20
)

// countResponse makes a forwarded response's body count its usage into
// its lease as the client reads it: from the JSON body, or from the
// events of a stream (Anthropic's message_start and message_delta,
// OpenAI's response.completed, a chat completion's last chunk).
func countResponse(resp *http.Response) error {
	f, _ := resp.Request.Context().Value(forwardKey{}).(*forward)
	if f == nil {
		return nil
	}
	kind, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resp.Body = &counter{body: resp.Body, lease: f.lease, sse: kind == "text/event-stream"}
	return nil
}

// counter reads a response's usage as it goes through, and counts it
// into its lease once, at its end or close. ReverseProxy reads and
// closes it from one goroutine.
type counter struct {
	body  io.ReadCloser
	lease *Lease
	sse   bool
	buf   []byte // the current event line, or the JSON body so far
	over  bool   // buf passed its bound: its content is not parsed
	seen  Usage  // the largest of each count the response gave
	once  sync.Once
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	if c.sse {
		c.scanEvents(p[:n])
	} else {
		c.keep(p[:n], maxJSONBody)
	}
	if err == io.EOF {
		c.done()
	}
	return n, err
}

func (c *counter) Close() error {
	c.done()
	return c.body.Close()
}

// done counts the response into its lease.
func (c *counter) done() {
	c.once.Do(func() {
		if !c.sse && !c.over {
			c.parse(c.buf)
		}
		c.seen.Requests = 1
		c.lease.count(c.seen)
	})
}

// keep adds b to buf, up to max bytes.
func (c *counter) keep(b []byte, max int) {
	if c.over {
		return
	}
	if len(c.buf)+len(b) > max {
		c.over, c.buf = true, nil
		return
	}
	c.buf = append(c.buf, b...)
}

// scanEvents parses each complete "data:" line.
func (c *counter) scanEvents(b []byte) {
	for len(b) > 0 {
		line, rest, complete := bytes.Cut(b, []byte("\n"))
		c.keep(line, maxEventLine)
		if !complete {
			return
		}
		if data, ok := bytes.CutPrefix(bytes.TrimRight(c.buf, "\r"), []byte("data:")); ok && !c.over {
			c.parse(bytes.TrimSpace(data))
		}
		c.buf, c.over, b = c.buf[:0], false, rest
	}
}

// usageFields are the counts both providers' usage objects may hold.
type usageFields struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CacheRead        int64 `json:"cache_read_input_tokens"`
	InputDetails     struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	PromptDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type withUsage struct {
	Usage *usageFields `json:"usage"`
}

// parse reads the usage of one JSON document: at its top (a message, a
// chat completion, a message_delta), in its message (message_start) or
// in its response (response.completed). Counts only grow within a
// response (message_delta's output_tokens is the total so far), so the
// largest of each is kept.
func (c *counter) parse(data []byte) {
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return
	}
	var doc struct {
		withUsage
		Message  *withUsage `json:"message"`
		Response *withUsage `json:"response"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return
	}
	for _, u := range []*withUsage{&doc.withUsage, doc.Message, doc.Response} {
		if u == nil || u.Usage == nil {
			continue
		}
		f := u.Usage
		c.seen.InputTokens = max(c.seen.InputTokens, f.InputTokens, f.PromptTokens)
		c.seen.OutputTokens = max(c.seen.OutputTokens, f.OutputTokens, f.CompletionTokens)
		c.seen.CachedInputTokens = max(c.seen.CachedInputTokens, f.CacheRead, f.InputDetails.CachedTokens, f.PromptDetails.CachedTokens)
	}
}
