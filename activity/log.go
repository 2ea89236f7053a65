package activity

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// FileBytes is the size at which a project's timeline file is rotated: the
// project keeps its current file and the one before, so a timeline takes
// at most twice this, plus one entry (at most maxEntryBytes), thumbnails
// included. An entry of an acting tool with its two thumbnails is about
// 20 to 40 KiB, any other under 1 KiB: some 200 acting steps or 8,000
// others per file.
const FileBytes = 4 << 20

// maxEntryBytes bounds one line: its text and thumbnails are bounded
// (Entry.bounded), so a line is never near it.
const maxEntryBytes = 2*maxThumbnail*4/3 + 8<<10

// Log is the timelines under a state directory, one per project.
type Log struct {
	dir string
}

// NewLog returns the timelines under stateDir/timeline.
func NewLog(stateDir string) *Log {
	return &Log{dir: filepath.Join(stateDir, "timeline")}
}

// key names a project's files.
func key(project string) string {
	sum := sha256.Sum256([]byte(project))
	return hex.EncodeToString(sum[:8])
}

func (l *Log) current(project string) string { return filepath.Join(l.dir, key(project)+".jsonl") }
func (l *Log) previous(project string) string {
	return filepath.Join(l.dir, key(project)+".1.jsonl")
}
func (l *Log) seqFile(project string) string { return filepath.Join(l.dir, key(project)+".seq") }
func (l *Log) onceFile(project string) string {
	return filepath.Join(l.dir, key(project)+".once")
}

// Append gives e the project's next seq and appends it; it returns e as
// written.
func (l *Log) Append(project string, e Entry) (Entry, error) {
	e, _, err := l.AppendOnce(project, "", e)
	return e, err
}

// AppendOnce appends e as Append does, unless once is the once of the
// project's last AppendOnce: what every sidecar of the user sees at the
// same time (a policy's stop, a container that died), named by once,
// is recorded by the first that sees it. An empty once always appends.
// It says whether it appended.
func (l *Log) AppendOnce(project, once string, e Entry) (Entry, bool, error) {
	e = e.bounded()
	e.ProjectPath = project
	if e.Time == 0 {
		e.Time = time.Now().UnixMilli()
	}
	unlock, err := l.lock(project)
	if err != nil {
		return e, false, err
	}
	defer unlock()
	if once != "" {
		if last, err := os.ReadFile(l.onceFile(project)); err == nil && string(last) == once {
			return e, false, nil
		}
	}
	e.Seq = l.lastSeq(project) + 1
	line, err := json.Marshal(e)
	if err != nil {
		return e, false, err
	}
	if err := l.appendLine(project, append(line, '\n')); err != nil {
		return e, false, err
	}
	err = os.WriteFile(l.seqFile(project), []byte(strconv.FormatInt(e.Seq, 10)), 0o600)
	if once != "" {
		err = errors.Join(err, os.WriteFile(l.onceFile(project), []byte(once), 0o600))
	}
	return e, true, err
}

// lastSeq is the last seq given, from the seq file or, if it is gone or
// torn, from the entries.
func (l *Log) lastSeq(project string) int64 {
	data, err := os.ReadFile(l.seqFile(project))
	if n, perr := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64); err == nil && perr == nil && n >= 0 {
		return n
	}
	var last int64
	for _, path := range []string{l.previous(project), l.current(project)} {
		entries, _ := readFile(path)
		for _, e := range entries {
			last = max(last, e.Seq)
		}
	}
	return last
}

// appendLine appends line to the current file, rotating it first when it
// is full.
func (l *Log) appendLine(project string, line []byte) error {
	path := l.current(project)
	if info, err := os.Stat(path); err == nil && info.Size()+int64(len(line)) > FileBytes {
		if err := os.Rename(path, l.previous(project)); err != nil {
			return fmt.Errorf("rotate timeline: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(line)
	return errors.Join(werr, f.Close())
}

// Read returns the project's entries with seq above since, oldest first:
// the first limit of them, or with since 0, the newest limit. A file with
// a line that is not an entry is set aside (renamed .corrupt-TIME beside
// it), and the timeline goes on without it.
func (l *Log) Read(project string, since int64, limit int) ([]Entry, error) {
	var out []Entry
	for _, path := range []string{l.previous(project), l.current(project)} {
		entries, err := readFile(path)
		if errors.Is(err, errCorrupt) {
			l.setAside(project, path)
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Seq > since {
				out = append(out, e)
			}
		}
	}
	if limit > 0 && len(out) > limit {
		if since == 0 {
			return out[len(out)-limit:], nil
		}
		return out[:limit], nil
	}
	return out, nil
}

var errCorrupt = errors.New("timeline file is corrupt")

// readFile reads a timeline file; a missing one has no entries. A line cut
// short at the end (a process killed mid-write) is left out; any other bad
// line makes the file corrupt.
func readFile(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parse(data)
}

func parse(data []byte) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), FileBytes+maxEntryBytes)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Seq <= 0 {
			if !bytes.HasSuffix(data, []byte("\n")) && bytes.HasSuffix(data, sc.Bytes()) {
				break // the torn last line
			}
			return out, fmt.Errorf("%w: %s", errCorrupt, reason(err))
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

func reason(err error) string {
	if err == nil {
		return "an entry without a seq"
	}
	return err.Error()
}

// setAside moves a corrupt file out of the way, under the lock, so that
// nothing is lost and the next append starts a good file.
func (l *Log) setAside(project, path string) {
	unlock, err := l.lock(project)
	if err != nil {
		return
	}
	defer unlock()
	if _, err := readFile(path); errors.Is(err, errCorrupt) {
		os.Rename(path, fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405.000Z")))
	}
}

// lock takes the project's lock file, waiting for another process that
// holds it; it returns its release.
func (l *Log) lock(project string) (func(), error) {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(l.dir, key(project)+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock timeline: %w", err)
	}
	return func() { f.Close() }, nil // closing the file lets the lock go
}
