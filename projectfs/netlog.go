package projectfs

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// NetLog is each project's connection log (docs/protocol.md,
// sandbox/network/log), kept under the user's state directory so that it
// outlives the process that carried the connections and every process of
// the user reads the same one. One JSON line per connection, in a file per
// project that is rotated at NetLogFileBytes: the project keeps its
// current file and the one before, at most twice that in all.
type NetLog struct {
	dir string
}

// NetLogEntry is one connection, as the protocol shows it.
type NetLogEntry struct {
	Time     int64           `json:"time"`
	Host     string          `json:"host"`
	Port     int             `json:"port"`
	Protocol string          `json:"protocol"`
	Decision string          `json:"decision"` // "allow" or "deny"
	By       string          `json:"by"`
	Rule     string          `json:"rule,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	BytesIn  int64           `json:"bytesIn"`
	BytesOut int64           `json:"bytesOut"`
	Cause    json.RawMessage `json:"cause,omitempty"`
	Process  json.RawMessage `json:"process,omitempty"`
}

// Bounds of the log.
const (
	// NetLogFileBytes is the size at which a project's log file is
	// rotated (about 2,500 entries of 200 bytes).
	NetLogFileBytes = 512 << 10
	// maxNetLogLine bounds one entry as written; a longer one (a hostile
	// command line in its process) is cut to its essentials.
	maxNetLogLine = 4 << 10
)

// NewNetLog returns the logs under stateDir; without a state directory
// nothing is kept.
func NewNetLog(stateDir string) NetLog {
	if stateDir == "" {
		return NetLog{}
	}
	return NetLog{dir: filepath.Join(stateDir, "netlog")}
}

func (l NetLog) names(project string) (current, previous string) {
	sum := sha256.Sum256([]byte(project))
	base := hex.EncodeToString(sum[:8])
	return base + ".jsonl", base + ".1.jsonl"
}

// Append adds entries to the project's log, rotating it first when they
// would take it past NetLogFileBytes.
func (l NetLog) Append(project string, entries []NetLogEntry) error {
	if l.dir == "" || len(entries) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for _, e := range entries {
		buf.Write(netLogLine(e))
	}
	dir, err := openStateDir(l.dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	current, previous := l.names(project)
	if unlock, err := lockWithin(filepath.Join(l.dir, current+".lock"), registryLockWait); err == nil {
		defer unlock()
	}
	if info, err := dir.Lstat(current); err == nil && info.Size()+int64(buf.Len()) > NetLogFileBytes {
		if err := dir.Rename(current, previous); err != nil {
			return err
		}
	}
	f, err := dir.OpenFile(current, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	data := buf.Bytes()
	if cutShort(f) {
		// A write cut short (a killed process) must not take this
		// batch's first entry with it.
		data = append([]byte{'\n'}, data...)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cutShort says whether the file ends inside a line.
func cutShort(f *os.File) bool {
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return false
	}
	last := make([]byte, 1)
	_, err = f.ReadAt(last, info.Size()-1)
	return err == nil && last[0] != '\n'
}

// netLogLine is one entry as a line, within maxNetLogLine.
func netLogLine(e NetLogEntry) []byte {
	data, _ := json.Marshal(e)
	if len(data) >= maxNetLogLine {
		e.Process, e.Cause, e.Reason = nil, nil, clipText(e.Reason, 300)
		data, _ = json.Marshal(e)
	}
	return append(data, '\n')
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Tail returns the project's last n entries (all kept for n <= 0), oldest
// first. A line that is not an entry (a write cut short) is skipped.
func (l NetLog) Tail(project string, n int) ([]NetLogEntry, error) {
	if l.dir == "" {
		return nil, nil
	}
	current, previous := l.names(project)
	var out []NetLogEntry
	for _, name := range []string{previous, current} {
		data, err := readBounded(filepath.Join(l.dir, name), 2*NetLogFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, maxNetLogLine), 2*maxNetLogLine)
		for sc.Scan() {
			var e NetLogEntry
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				out = append(out, e)
			}
		}
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}
