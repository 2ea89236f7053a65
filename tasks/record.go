package tasks

import (
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Record is what is kept of a task, in the user's state (tasks/ID.json):
// enough to list it, to reattach to it after a restart, and to read its
// change.
type Record struct {
	ID          string   `json:"taskId"`
	ProjectPath string   `json:"projectPath"`
	Agent       string   `json:"agent"`
	Prompt      string   `json:"prompt,omitempty"`
	Argv        []string `json:"argv"`
	Timeout     string   `json:"timeout"`
	Container   string   `json:"container"`
	Base        string   `json:"base"`
	Status      string   `json:"status"`
	// StartedAt and FinishedAt are Unix milliseconds, as the protocol's
	// times are.
	StartedAt int64 `json:"startedAt"`
	// Events counts the task's events so far (the last one sent, for a
	// sidecar that reattaches).
	Events int `json:"events"`
	// Set once the task ended.
	FinishedAt int64     `json:"finishedAt,omitempty"`
	Finished   *Finished `json:"finished,omitempty"`
}

// recordsDir is where the records are kept.
func recordsDir(stateDir string) string { return filepath.Join(stateDir, "tasks") }

// Bounds on the records kept.
const (
	// maxRecords bounds the records kept; the oldest finished ones go
	// first.
	maxRecords = 500
	// maxRecordFile bounds a record file read.
	maxRecordFile = 1 << 20
)

// records reads and writes the records' files.
type records struct {
	dir string
}

func (r records) save(rec Record) error {
	return projectfs.WriteStateFile(r.dir, rec.ID+".json", func(w io.Writer) error {
		return json.NewEncoder(w).Encode(rec)
	})
}

func (r records) load(id string) (Record, error) {
	if !validID(id) {
		return Record{}, ErrTaskNotFound
	}
	f, err := projectfs.OpenStateFile(r.dir, id+".json")
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, ErrTaskNotFound
	}
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	var rec Record
	if err := json.NewDecoder(io.LimitReader(f, maxRecordFile)).Decode(&rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// all reads every record, newest first; unreadable ones are skipped.
func (r records) all() []Record {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil
	}
	var out []Record
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if rec, err := r.load(id); err == nil {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(b.StartedAt, a.StartedAt) })
	return out
}

func (r records) remove(id string) {
	if validID(id) {
		os.Remove(filepath.Join(r.dir, id+".json"))
	}
}

// prune removes the oldest finished records past maxRecords.
func (r records) prune() {
	all := r.all()
	for i := len(all) - 1; i >= maxRecords; i-- {
		if all[i].Status != StatusRunning {
			os.Remove(filepath.Join(r.dir, all[i].ID+".json"))
		}
	}
}

// The access files: a running task's access to the model gateway
// (KeptAccess: its token and port inside the sandbox, what it used), for
// a sidecar that reattaches. In a folder of their own beside the records
// (tasks/models/ID.json, 0600 as every state file) so that no record,
// which clients get, holds a token; removed as the task ends.
func (r records) accessDir() string { return filepath.Join(r.dir, "models") }

// maxAccessFile bounds an access file read.
const maxAccessFile = 64 << 10

func (r records) saveAccess(id string, k KeptAccess) error {
	return projectfs.WriteStateFile(r.accessDir(), id+".json", func(w io.Writer) error {
		return json.NewEncoder(w).Encode(k)
	})
}

// loadAccess is the task's kept access; false when there is none (or it
// cannot be read: the task goes on without).
func (r records) loadAccess(id string) (KeptAccess, bool) {
	if !validID(id) {
		return KeptAccess{}, false
	}
	f, err := projectfs.OpenStateFile(r.accessDir(), id+".json")
	if err != nil {
		return KeptAccess{}, false
	}
	defer f.Close()
	var k KeptAccess
	if err := json.NewDecoder(io.LimitReader(f, maxAccessFile)).Decode(&k); err != nil || len(k.Resume) == 0 {
		return KeptAccess{}, false
	}
	return k, true
}

func (r records) removeAccess(id string) {
	if validID(id) {
		os.Remove(filepath.Join(r.accessDir(), id+".json"))
	}
}

// validID says id is one this package makes (newID).
func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
