package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/pilot-sandbox/pilot-sandbox/rpc/wire"
)

// The plumbing of TestConversations: the server's ends of a byte-stream
// connection, and the recording of what it writes.

// pipeConn is a byte-stream connection: what is sent goes through an
// io.Pipe into the server's framer.
type pipeConn struct {
	w *io.PipeWriter
	*watchedReader
}

func (p *pipeConn) send(data []byte) error { _, err := p.w.Write(data); return err }
func (p *pipeConn) closeInput()            { p.w.Close() }

// watchedReader is the server's input. It counts the bytes the server has
// taken and the reads it has started, so that the conversation can tell when
// everything sent has been read and dispatched: the server asks for more
// input only after it dispatched every complete frame it had.
type watchedReader struct {
	r io.Reader

	mu          sync.Mutex // guards the fields below
	reads       int        // Read calls started
	delivered   int64      // bytes returned
	deliveredBy int        // the Read call that returned the last bytes
	err         error      // what the last Read returned
}

func (w *watchedReader) Read(p []byte) (int, error) {
	w.mu.Lock()
	w.reads++
	call := w.reads
	w.mu.Unlock()
	n, err := w.r.Read(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.delivered += int64(n)
	if n > 0 {
		w.deliveredBy = call
	}
	w.err = err
	return n, err
}

// consumed says whether the first n bytes were read, and the server has
// since asked for more.
func (w *watchedReader) consumed(n int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.delivered >= n && (w.reads > w.deliveredBy || w.err != nil)
}

func (w *watchedReader) atEOF() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil
}

// recorder is the server's output: it checks each frame's framing and
// keeps its message in a normal form (keys sorted, $ROOT for the temporary
// directory), with notes of other happenings in between.
type recorder struct {
	framing wire.Framing
	root    string

	mu    sync.Mutex // guards lines
	lines []string
}

// Write takes one frame: both framers write a whole frame in one call.
func (r *recorder) Write(p []byte) (int, error) {
	r.add("<- " + r.normalize(p))
	return len(p), nil
}

func (r *recorder) normalize(frame []byte) string {
	body, err := unframe(r.framing, frame)
	if err != nil {
		return "BAD FRAME " + strconv.Quote(string(frame)) + ": " + err.Error()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "NOT JSON " + strconv.Quote(string(body))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.ReplaceAll(strings.TrimSpace(buf.String()), r.root, "$ROOT")
}

// unframe checks one frame and returns its body.
func unframe(f wire.Framing, frame []byte) ([]byte, error) {
	if f == framingWebSocket {
		return frame, nil
	}
	if f == wire.FramingNDJSON {
		body, ok := bytes.CutSuffix(frame, []byte("\n"))
		if !ok || bytes.ContainsRune(body, '\n') {
			return nil, fmt.Errorf("not one line")
		}
		return body, nil
	}
	br := bufio.NewReader(bytes.NewReader(frame))
	header, err := br.ReadString('\n')
	n, ok := strings.CutPrefix(strings.TrimSuffix(header, "\r\n"), "Content-Length: ")
	length, convErr := strconv.Atoi(n)
	if blank, _ := br.ReadString('\n'); err != nil || !ok || convErr != nil || blank != "\r\n" {
		return nil, fmt.Errorf("bad header")
	}
	body, _ := io.ReadAll(br)
	if len(body) != length {
		return nil, fmt.Errorf("Content-Length %d, body %d bytes", length, len(body))
	}
	return body, nil
}

func (r *recorder) note(what string) { r.add("== " + what) }

func (r *recorder) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := r.lines
	r.lines = nil
	return lines
}

// lineDiff shows the first lines where want and got part.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, wl, gl)
		}
	}
	return "(no difference)"
}
