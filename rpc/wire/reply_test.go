package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// objectRecorder is an ObjectStream that marshals what a jsonrpc2.Conn
// writes, as Stream.WriteObject does, and reads nothing.
type objectRecorder struct {
	frames chan []byte
	closed chan struct{}
}

func (r *objectRecorder) WriteObject(obj any) error {
	data, err := json.Marshal(obj)
	r.frames <- data
	return err
}
func (r *objectRecorder) ReadObject(any) error { <-r.closed; return io.EOF }
func (r *objectRecorder) Close() error         { close(r.closed); return nil }

// toolResult is the shape of an agent tool's result (tools.Result): the
// largest replies, an image's bytes in base64.
type (
	toolResult struct {
		Content []toolContent `json:"content"`
		IsError bool          `json:"isError"`
	}
	toolContent struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		Data     []byte `json:"data,omitempty"`
		MimeType string `json:"mimeType,omitempty"`
	}
)

// TestResultFrameIsConnReply holds the reply a resultWriter sends to the
// bytes jsonrpc2's own Conn.Reply writes, for ids and results that
// exercise what a marshal may change: escapes, HTML characters, invalid
// UTF-8, raw messages with spaces, null, and a tool's image.
func TestResultFrameIsConnReply(t *testing.T) {
	image := toolResult{Content: []toolContent{
		{Type: "image", Data: bytes.Repeat([]byte("\x89PNG\r\n\x1a\n\x00\xff"), 1000), MimeType: "image/png"},
		{Type: "text", Text: "a <b> & \"c\"\n\u2028 \xff é"},
	}}
	results := []any{
		nil,
		image,
		&image,
		toolResult{Content: []toolContent{}},
		json.RawMessage(`{ "a" : [1, 2 ,"<x>"] }`),
		map[string]any{"z": 1, "a": "\x00\t</script>"},
		struct {
			Removed bool `json:"removed"`
		}{true},
		"plain",
	}
	ids := []jsonrpc2.ID{{Num: 0}, {Num: 1<<63 - 1}, {Str: "a<&>\"b\u2029", IsString: true}, {Str: "", IsString: true}}
	rec := &objectRecorder{frames: make(chan []byte, 1), closed: make(chan struct{})}
	conn := jsonrpc2.NewConn(context.Background(), rec, nil)
	defer conn.Close()
	for _, id := range ids {
		for _, result := range results {
			if err := conn.Reply(context.Background(), id, result); err != nil {
				t.Fatal(err)
			}
			want := <-rec.frames
			idJSON, _ := json.Marshal(id)
			got, err := responseFrame(idJSON, result)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("id %+v, result %T:\n got %.300s\nwant %.300s", id, result, got, want)
			}
		}
	}
}
