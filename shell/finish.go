package shell

import (
	"bytes"
	"io"
	"strconv"
	"sync"
)

// Finish reads a foreground command's stdout and stderr as Foreground's
// wrapper writes them, and tells when the command is over: the wrapper
// writes the marker on each stream once the command has exited. Each
// stream is a pipe, so everything the command wrote to it comes before its
// marker; what follows it is a background child's, and is dropped. Output
// goes on to the writers given, without the marker.
//
// On stderr the marker is followed by the command's exit status and ";".
// Done closes once both markers (and the status) have come. A stream that
// ends without its marker (the wrapper was killed) keeps the bytes that
// might have begun one until Flush.
type Finish struct {
	marker []byte
	done   chan struct{}

	mu      sync.Mutex // guards the fields below
	streams [2]*watched
	seen    int // streams whose marker came
	status  int // the command's exit status, once stderr's marker came
}

// watched is one stream's state.
type watched struct {
	f          *Finish
	out        io.Writer
	withStatus bool // the marker is followed by the status
	state      streamState
	pending    []byte // bytes that may begin the marker; then, the status so far
}

// streamState is where a stream is: before its marker, reading the status
// after it, or over.
type streamState int

const (
	beforeMarker streamState = iota
	readingStatus
	over
)

// maxStatus bounds the bytes read as a status ("-1", "255").
const maxStatus = 8

// NewFinish watches for marker, passing output on to stdout and stderr.
func NewFinish(marker string, stdout, stderr io.Writer) *Finish {
	f := &Finish{marker: []byte(marker), done: make(chan struct{})}
	f.streams = [2]*watched{{f: f, out: stdout}, {f: f, out: stderr, withStatus: true}}
	return f
}

// Stdout is the writer for the command's stdout.
func (f *Finish) Stdout() io.Writer { return f.streams[0] }

// Stderr is the writer for the command's stderr.
func (f *Finish) Stderr() io.Writer { return f.streams[1] }

// Done is closed once the command is known to be over.
func (f *Finish) Done() <-chan struct{} { return f.done }

// Status is the command's exit status, once Done is closed.
func (f *Finish) Status() (int, bool) {
	select {
	case <-f.done:
	default:
		return 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, true
}

// Flush passes on what each stream held back while it might have begun a
// marker. Call it once no more output will come.
func (f *Finish) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.streams {
		if w.state == beforeMarker && len(w.pending) > 0 {
			w.out.Write(w.pending)
			w.pending = nil
		}
	}
}

func (w *watched) Write(p []byte) (int, error) {
	f := w.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch w.state {
	case over: // a background child's output
		return len(p), nil
	case readingStatus:
		w.readStatus(p)
		return len(p), nil
	}
	data := append(w.pending, p...)
	i := bytes.Index(data, f.marker)
	if i < 0 {
		keep := partialMarker(data, f.marker)
		w.pending = append([]byte(nil), data[len(data)-keep:]...)
		_, err := w.out.Write(data[:len(data)-keep])
		return len(p), err
	}
	w.pending = nil
	if _, err := w.out.Write(data[:i]); err != nil {
		return len(p), err
	}
	if w.withStatus {
		w.state = readingStatus
		w.readStatus(data[i+len(f.marker):])
	} else {
		w.end()
	}
	return len(p), nil
}

// readStatus reads the status after stderr's marker, up to ";".
func (w *watched) readStatus(p []byte) {
	end := bytes.IndexByte(p, ';')
	if end < 0 {
		w.pending = append(w.pending, p...)
		if len(w.pending) > maxStatus {
			w.f.status = -1 // not the wrapper's status: the end is known all the same
			w.end()
		}
		return
	}
	code, err := strconv.Atoi(string(append(w.pending, p[:end]...)))
	if err != nil {
		code = -1
	}
	w.f.status = code
	w.end()
}

// end marks the stream over, and the command once both are.
func (w *watched) end() {
	w.state, w.pending = over, nil
	if w.f.seen++; w.f.seen == len(w.f.streams) {
		close(w.f.done)
	}
}

// partialMarker is the length of the longest end of data that begins
// marker.
func partialMarker(data, marker []byte) int {
	for n := min(len(data), len(marker)-1); n > 0; n-- {
		if bytes.HasPrefix(marker, data[len(data)-n:]) {
			return n
		}
	}
	return 0
}
