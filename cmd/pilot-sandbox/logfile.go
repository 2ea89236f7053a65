package main

import (
	"os"
	"sync"
)

// logFile is the sidecar's log file. It is rotated while the process runs:
// a write that would take it past max bytes first moves it to path.1 (the
// one old copy kept) and starts a new file. Writes after close are dropped:
// goroutines that end after the command (a reply still being logged) must
// not fail on a closed file.
type logFile struct {
	path string
	max  int64

	mu sync.Mutex // guards f
	f  *os.File
}

// openLogFile opens the log at path for appending, rotating it first if it
// is already past max.
func openLogFile(path string, max int64) (*logFile, error) {
	l := &logFile{path: path, max: max}
	if info, err := os.Stat(path); err == nil && info.Size() > max {
		os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, nil
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return len(p), nil
	}
	// The file's own size, not a count of this process's writes: every
	// process of the user (a second serve, the command line) appends to it.
	if info, err := l.f.Stat(); err == nil && info.Size() > 0 && info.Size()+int64(len(p)) > l.max {
		l.rotate()
	}
	return l.f.Write(p)
}

// rotate moves the log to path.1 and opens a new one. When another process
// has rotated it already, path names a new file, which is opened rather
// than rotated again. A rotation that fails leaves the log where it was.
func (l *logFile) rotate() {
	cur, err := os.Stat(l.path)
	mine, err2 := l.f.Stat()
	if err == nil && err2 == nil && os.SameFile(cur, mine) {
		if os.Rename(l.path, l.path+".1") != nil {
			return
		}
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	l.f.Close()
	l.f = f
}

func (l *logFile) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
