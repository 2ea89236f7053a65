package projectfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Record is <project>/.pilot/sandbox.json: how the project remembers its
// sandbox. It holds nothing secret.
type Record struct {
	ContainerID   string  `json:"containerId"`
	ContainerName string  `json:"containerName"`
	Image         string  `json:"image"`
	WSPort        int     `json:"wsPort"`
	VNCPort       int     `json:"vncPort"`
	Status        string  `json:"status"`
	Display       Display `json:"display"`
	// StopReason says why the lifecycle policy stopped it, if it did.
	StopReason string `json:"stopReason,omitempty"`
	CreatedAt  int64  `json:"createdAt"`
	UpdatedAt  int64  `json:"updatedAt"`
}

// SandboxFile is the project's .pilot/sandbox.json.
func SandboxFile(project string) string {
	return filepath.Join(project, Dir, "sandbox.json")
}

// WriteRecord saves the record atomically, creating .pilot/ if needed. A
// corrupt or unreadable file in its place is set aside first, never
// overwritten: the returned FileError says where it went. A failure to
// write is a FileError (FileUnwritable) and leaves the old file as it was.
func WriteRecord(project string, rec Record, now time.Time) (aside *FileError, err error) {
	path := SandboxFile(project)
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := makePilotDir(project); err != nil {
		return nil, &FileError{Path: path, Problem: FileUnwritable, Err: bare(err)}
	}
	removeStaleTemps(path, now)
	if _, err := ReadRecord(project); err != nil {
		if aside, err = setAsideBad(path, err, now); err != nil {
			return nil, err
		}
	}
	if err := writeFileAtomic(path, append(data, '\n'), 0o644); err != nil {
		return aside, &FileError{Path: path, Problem: FileUnwritable, Err: bare(err)}
	}
	return aside, nil
}

// setAsideBad moves a file that readErr says is corrupt or unreadable out
// of the way and returns what it did, as a FileError with KeptAs.
func setAsideBad(path string, readErr error, now time.Time) (*FileError, error) {
	var fe *FileError
	if !errors.As(readErr, &fe) {
		return nil, readErr
	}
	kept, err := setAside(path, now)
	if err != nil {
		return nil, &FileError{Path: path, Problem: FileUnwritable, Err: fmt.Errorf("it is %s and cannot be moved aside: %w", fe.Problem, err)}
	}
	fe.KeptAs = kept
	return fe, nil
}

// ReadRecord loads the record. A missing file is (nil, nil); one that
// cannot be read, or is not a sandbox record, is a FileError.
func ReadRecord(project string) (*Record, error) {
	path := SandboxFile(project)
	data, err := os.ReadFile(path)
	if missing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &FileError{Path: path, Problem: FileUnreadable, Err: bare(err)}
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, &FileError{Path: path, Problem: FileCorrupt, Err: fmt.Errorf("%w: %v", errCorrupt, err)}
	}
	if rec.ContainerID == "" {
		// null, {}, or someone else's JSON: not a record this sidecar wrote.
		return nil, &FileError{Path: path, Problem: FileCorrupt, Err: fmt.Errorf("%w: no containerId", errCorrupt)}
	}
	return &rec, nil
}

// makePilotDir creates the project's .pilot directory if it is missing,
// but never the project directory itself: a project deleted while its
// sandbox lives on must stay deleted.
func makePilotDir(project string) error {
	err := os.Mkdir(filepath.Join(project, Dir), 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// RemoveRecord deletes the record; a missing file is not an error.
func RemoveRecord(project string) error {
	err := os.Remove(SandboxFile(project))
	if err != nil && !missing(err) {
		return &FileError{Path: SandboxFile(project), Problem: FileUnwritable, Err: bare(err)}
	}
	return nil
}

// SameRecord says whether two records describe the same sandbox, whenever
// they were written.
func SameRecord(a, b Record) bool {
	a.UpdatedAt, b.UpdatedAt = 0, 0
	return a == b
}

// RecordExists says whether the project has a .pilot/sandbox.json.
func RecordExists(project string) bool {
	_, err := os.Stat(SandboxFile(project))
	return err == nil
}
