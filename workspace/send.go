package workspace

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The stream a sync sends to `workspace.py receive` (see there for its
// records): a JSON line, then the removals and the files, through the
// exec's stdin. It streams: the files are read as the stream is written,
// in pieces of streamBuffer (Go's transport flushes each write of a
// request body as a chunk of its own), never held whole. Not tar: parsing
// tar headers in Python cost more than writing the files (10,000 files:
// 1 s of tarfile's 1.6 s).

const (
	streamBuffer = 256 << 10
	copyBuffer   = 1 << 20
	// reportEvery is how often a sync's progress is reported.
	reportEvery = 250 * time.Millisecond
)

// errShrank: a file was shorter when read than its lstat said.
var errShrank = errors.New("it shrank while it was read")

// errStreamEnded stops the writing of a stream the sandbox no longer reads.
var errStreamEnded = errors.New("the sandbox stopped reading the stream")

// Progress is how far a sync got: files and bytes sent of the total to
// send.
type Progress struct {
	Files, TotalFiles int
	Bytes, TotalBytes int64
}

// receiveAnswer is receive's JSON answer.
type receiveAnswer struct {
	Base    string `json:"base"`
	Changed bool   `json:"changed"`
	Saved   string `json:"saved"`
}

// send runs receive in the sandbox with the plan's stream as its stdin.
func (w *Workspace) send(ctx context.Context, p *plan, report func(Progress)) (receiveAnswer, error) {
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	prog := &progress{report: report, total: Progress{TotalFiles: len(p.send), TotalBytes: p.sendBytes}, last: time.Now()}
	go func() {
		// Ends when the stream is written or the exec stops reading it
		// (pr closed below).
		err := w.writeStream(pw, p, prog)
		pw.CloseWithError(err)
		wrote <- err
	}()
	var ans receiveAnswer
	err := w.callTimeout(ctx, 0, pr, &ans, "receive")
	pr.CloseWithError(errStreamEnded)
	// A failure to read a host file is the cause of the exec's failure,
	// which would only say the stream broke.
	if werr := <-wrote; werr != nil && !errors.Is(werr, errStreamEnded) && !errors.Is(werr, io.ErrClosedPipe) {
		return ans, werr
	}
	prog.finish()
	return ans, err
}

// writeStream writes the plan's stream to out.
func (w *Workspace) writeStream(out io.Writer, p *plan, prog *progress) error {
	bw := bufio.NewWriterSize(out, streamBuffer)
	head, _ := json.Marshal(map[string]any{"base": p.base, "full": p.full})
	if _, err := bw.Write(append(head, '\n')); err != nil {
		return err
	}
	if err := w.writeRecords(bw, p, prog); err != nil {
		return err
	}
	if err := bw.WriteByte('E'); err != nil {
		return err
	}
	return bw.Flush()
}

func (w *Workspace) writeRecords(out *bufio.Writer, p *plan, prog *progress) error {
	root, err := os.OpenRoot(w.project)
	if err != nil {
		return fmt.Errorf("open the project: %w", err)
	}
	defer root.Close()
	for _, rel := range p.remove {
		if err := writeRemoval(out, rel); err != nil {
			return err
		}
	}
	buf := make([]byte, copyBuffer)
	for _, l := range p.send {
		blob, err := writeListed(out, root, l, buf, prog)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Gone since it was listed: the sandbox must not keep it.
			delete(p.next, l.rel)
			err = writeRemoval(out, l.rel)
		case err == nil:
			e := p.next[l.rel]
			e.blob = blob
			p.next[l.rel] = e
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// record writes a record's kind, its fixed fields and its name.
func record(out *bufio.Writer, kind byte, name string, fields ...any) error {
	out.WriteByte(kind)
	for _, f := range fields {
		if err := binary.Write(out, binary.BigEndian, f); err != nil {
			return err
		}
	}
	_, err := out.WriteString(name)
	return err
}

func writeRemoval(out *bufio.Writer, rel string) error {
	return record(out, 'R', rel, uint32(len(rel)))
}

// writeListed writes one file or link and returns its blob id.
func writeListed(out *bufio.Writer, root *os.Root, l listed, buf []byte, prog *progress) (string, error) {
	if l.info.Mode()&fs.ModeSymlink != 0 {
		target, err := root.Readlink(filepath.FromSlash(l.rel))
		if err != nil {
			return "", err
		}
		prog.add(1, 0)
		if err := record(out, 'L', l.rel, uint32(len(l.rel)), uint32(len(target))); err != nil {
			return "", err
		}
		_, err = out.WriteString(target)
		return linkBlob(target), err
	}
	f, err := root.Open(filepath.FromSlash(l.rel))
	if err != nil {
		return "", err
	}
	defer f.Close()
	size := l.info.Size()
	if err := record(out, 'F', l.rel, uint16(l.info.Mode().Perm()), uint32(len(l.rel)), uint64(size)); err != nil {
		return "", err
	}
	h := blobHash(size)
	src := &hostReader{r: io.TeeReader(io.LimitReader(f, size), h)}
	n, err := io.CopyBuffer(progressWriter{out, prog}, src, buf)
	switch {
	case src.err != nil:
		return "", fmt.Errorf("read %s: %w", l.rel, src.err)
	case err != nil:
		return "", err // the exec stopped reading
	case n < size:
		return "", fmt.Errorf("%s: %w (sync again)", l.rel, errShrank)
	}
	prog.add(1, 0)
	return hexSum(h), nil
}

// progressWriter counts the bytes of a file as they go, so that a large
// one moves the progress too.
type progressWriter struct {
	w    io.Writer
	prog *progress
}

func (p progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.prog.add(0, int64(n))
	return n, err
}

// hostReader keeps the error of reading a host file apart from that of
// writing the stream.
type hostReader struct {
	r   io.Reader
	err error
}

func (h *hostReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err != nil && err != io.EOF {
		h.err = err
	}
	return n, err
}

// progress counts a sync's stream and reports it now and then. It is used
// by the stream's goroutine, then (finish) by the caller after it ended.
type progress struct {
	report func(Progress)
	total  Progress
	done   Progress
	last   time.Time
}

func (p *progress) add(files int, bytes int64) {
	p.done.Files += files
	p.done.Bytes += bytes
	if p.report != nil && time.Since(p.last) >= reportEvery {
		p.last = time.Now()
		p.report(p.current())
	}
}

func (p *progress) current() Progress {
	return Progress{Files: p.done.Files, Bytes: p.done.Bytes, TotalFiles: p.total.TotalFiles, TotalBytes: p.total.TotalBytes}
}

func (p *progress) finish() {
	if p.report != nil {
		p.report(p.current())
	}
}
