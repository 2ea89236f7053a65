package activity

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// PollInterval is how often Follow looks for entries other processes
// wrote: one stat of each project's file. A process's own entries are
// sent at once.
const PollInterval = 500 * time.Millisecond

// Recorder is a process's side of the timelines: it appends, and tells
// its listeners every new entry, its own and other processes', in seq
// order per project.
type Recorder struct {
	log  *Log
	kick chan struct{} // an append of this process: look now

	mu        sync.Mutex // guards listeners and next
	listeners map[int]func(Entry)
	next      int
}

// NewRecorder returns a recorder of the timelines under stateDir.
func NewRecorder(stateDir string) *Recorder {
	return &Recorder{log: NewLog(stateDir), kick: make(chan struct{}, 1), listeners: map[int]func(Entry){}}
}

// Log is the timelines the recorder appends to.
func (r *Recorder) Log() *Log { return r.log }

// Add appends an entry to the project's timeline, with the origin in ctx
// unless e names its source; a failure to write is returned and the caller
// goes on (a timeline is a record, never a reason to refuse an action).
func (r *Recorder) Add(ctx context.Context, project string, e Entry) error {
	return r.AddOnce(ctx, project, "", e)
}

// AddOnce records e as Add does, unless once names what the project's
// last AddOnce recorded (Log.AppendOnce).
func (r *Recorder) AddOnce(ctx context.Context, project, once string, e Entry) error {
	if e.Source == "" {
		o := OriginOf(ctx)
		e.Source, e.Client = o.Source, o.Client
	}
	if _, added, err := r.log.AppendOnce(project, once, e); err != nil || !added {
		return err
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return nil
}

// Listen calls fn with every new entry until stop. fn must not block.
func (r *Recorder) Listen(fn func(Entry)) (stop func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.next
	r.next++
	r.listeners[id] = fn
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.listeners, id)
	}
}

func (r *Recorder) tell(e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, fn := range r.listeners {
		fn(e)
	}
}

// Follow reads the entries appended to any timeline from now on, by this
// process or another, and tells the listeners, until ctx ends.
func (r *Recorder) Follow(ctx context.Context) { r.follow(ctx, r.startFollower()) }

// startFollower notes where each file ends: what is there is history.
func (r *Recorder) startFollower() *follower {
	f := &follower{log: r.log, at: map[string]position{}, tell: r.tell}
	f.scan(true)
	return f
}

func (r *Recorder) follow(ctx context.Context, f *follower) {
	poll(ctx, r.kick, func() { f.scan(false) })
}

// poll calls scan every PollInterval, and at once when this process kicks
// (it wrote), until ctx ends: the timelines and the control files are
// followed alike.
func poll(ctx context.Context, kick <-chan struct{}, scan func()) {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		scan()
	}
}

// position is how far a project's current file has been read.
type position struct {
	file   os.FileInfo
	offset int64
	seq    int64 // the last seq told
}

// follower reads what was appended to each file since it last looked.
// Only Follow's goroutine uses it.
type follower struct {
	log  *Log
	at   map[string]position // by the current file's path
	tell func(Entry)
}

// scan looks at every project's current file; at the start it only notes
// where each ends.
func (f *follower) scan(start bool) {
	paths, _ := filepath.Glob(filepath.Join(f.log.dir, "*.jsonl"))
	for _, path := range paths {
		if strings.HasSuffix(path, ".1.jsonl") {
			continue
		}
		info, err := os.Stat(path)
		if err != nil {
			continue
		}
		p, known := f.at[path]
		switch {
		case start:
			f.at[path] = position{file: info, offset: info.Size()}
			continue
		case known && os.SameFile(p.file, info) && info.Size() == p.offset:
			continue
		}
		f.at[path] = f.read(path, p, known, info)
	}
}

// read tells the entries appended to path since p; when path was rotated,
// the rest of the file before it first.
func (f *follower) read(path string, p position, known bool, info os.FileInfo) position {
	if known && !os.SameFile(p.file, info) {
		prev := strings.TrimSuffix(path, ".jsonl") + ".1.jsonl"
		if old, err := os.Stat(prev); err == nil && os.SameFile(old, p.file) {
			p.seq, _ = f.tellFrom(prev, p.offset, p.seq)
		}
		p.offset = 0
	}
	p.file = info
	if info.Size() < p.offset { // set aside and begun again
		p.offset = 0
	}
	p.seq, p.offset = f.tellFrom(path, p.offset, p.seq)
	return p
}

// tellFrom tells the whole lines of path from offset with seq above last,
// and returns the last seq told and the offset after the last whole line
// (a line being written is read next time). It reads at most what a file
// holds.
func (f *follower) tellFrom(path string, offset, last int64) (int64, int64) {
	file, err := os.Open(path)
	if err != nil {
		return last, offset
	}
	defer file.Close()
	data, err := io.ReadAll(io.NewSectionReader(file, offset, FileBytes+maxEntryBytes))
	if err != nil {
		return last, offset
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	offset += int64(len(data))
	entries, _ := parse(data)
	for _, e := range entries {
		if e.Seq > last {
			f.tell(e)
			last = e.Seq
		}
	}
	return last, offset
}
