package shell

import (
	"bytes"
	"io"
	"sync"
)

// Finish reads a foreground command's stdout and stderr as Foreground's
// wrapper writes them, and tells when the command is over: the wrapper
// writes the marker on each stream once the command has exited. Each
// stream is a pipe, so everything the command wrote to it comes before its
// marker; what follows it is a background child's, and is dropped. Output
// goes on to the writers given, without the marker.
//
// Done closes once both markers have come. A stream that ends without its
// marker (the wrapper was killed) keeps the bytes that might have begun
// one until Flush.
type Finish struct {
	marker []byte
	done   chan struct{}

	mu      sync.Mutex // guards the fields below
	streams [2]*watched
	seen    int // streams whose marker came
}

// watched is one stream's state.
type watched struct {
	f       *Finish
	out     io.Writer
	pending []byte // bytes that may begin the marker
	over    bool   // the marker came
}

// NewFinish watches for marker, passing output on to stdout and stderr.
func NewFinish(marker string, stdout, stderr io.Writer) *Finish {
	f := &Finish{marker: []byte(marker), done: make(chan struct{})}
	f.streams = [2]*watched{{f: f, out: stdout}, {f: f, out: stderr}}
	return f
}

// Stdout is the writer for the command's stdout.
func (f *Finish) Stdout() io.Writer { return f.streams[0] }

// Stderr is the writer for the command's stderr.
func (f *Finish) Stderr() io.Writer { return f.streams[1] }

// Done is closed once the command is known to be over.
func (f *Finish) Done() <-chan struct{} { return f.done }

// Flush passes on what each stream held back while it might have begun a
// marker. Call it once no more output will come.
func (f *Finish) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.streams {
		if !w.over && len(w.pending) > 0 {
			w.out.Write(w.pending)
			w.pending = nil
		}
	}
}

func (w *watched) Write(p []byte) (int, error) {
	f := w.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.over {
		return len(p), nil
	}
	data := append(w.pending, p...)
	if i := bytes.Index(data, f.marker); i >= 0 {
		w.over, w.pending = true, nil
		if _, err := w.out.Write(data[:i]); err != nil {
			return 0, err
		}
		if f.seen++; f.seen == len(f.streams) {
			close(f.done)
		}
		return len(p), nil
	}
	keep := partialMarker(data, f.marker)
	w.pending = append([]byte(nil), data[len(data)-keep:]...)
	if _, err := w.out.Write(data[:len(data)-keep]); err != nil {
		return 0, err
	}
	return len(p), nil
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
