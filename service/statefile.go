package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// pilotDir is the per-project directory the sidecar and the desktop app share.
const pilotDir = ".pilot"

// sandboxRecord is <project>/.pilot/sandbox.json: how the project remembers its
// sandbox. It holds nothing secret.
type sandboxRecord struct {
	ContainerID   string  `json:"containerId"`
	ContainerName string  `json:"containerName"`
	Image         string  `json:"image"`
	WSPort        int     `json:"wsPort"`
	VNCPort       int     `json:"vncPort"`
	Status        Status  `json:"status"`
	Display       Display `json:"display"`
	CreatedAt     int64   `json:"createdAt"`
	UpdatedAt     int64   `json:"updatedAt"`
}

func recordOf(st State, now time.Time) sandboxRecord {
	return sandboxRecord{
		ContainerID:   st.ContainerID,
		ContainerName: st.ContainerName,
		Image:         st.Image,
		WSPort:        st.WSPort,
		VNCPort:       st.VNCPort,
		Status:        st.Status,
		Display:       st.Display,
		CreatedAt:     st.CreatedAt,
		UpdatedAt:     now.UnixMilli(),
	}
}

func sandboxFile(project string) string {
	return filepath.Join(project, pilotDir, "sandbox.json")
}

// writeRecord saves the record atomically, creating .pilot/ if needed. A
// corrupt or unreadable file in its place is set aside first, never
// overwritten: the returned FileError says where it went. A failure to
// write is a FileError (FileUnwritable) and leaves the old file as it was.
func writeRecord(project string, rec sandboxRecord, now time.Time) (aside *FileError, err error) {
	path := sandboxFile(project)
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := makePilotDir(project); err != nil {
		return nil, &FileError{Path: path, Problem: FileUnwritable, Err: bare(err)}
	}
	removeStaleTemps(path, now)
	if _, err := readRecord(project); err != nil {
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

// errCorrupt marks a file that exists but cannot be used as it is.
var errCorrupt = errors.New("corrupt file")

// readRecord loads the record. A missing file is (nil, nil); one that
// cannot be read, or is not a sandbox record, is a FileError.
func readRecord(project string) (*sandboxRecord, error) {
	path := sandboxFile(project)
	data, err := os.ReadFile(path)
	if missing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &FileError{Path: path, Problem: FileUnreadable, Err: bare(err)}
	}
	var rec sandboxRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, &FileError{Path: path, Problem: FileCorrupt, Err: fmt.Errorf("%w: %v", errCorrupt, err)}
	}
	if rec.ContainerID == "" {
		// null, {}, or someone else's JSON: not a record this sidecar wrote.
		return nil, &FileError{Path: path, Problem: FileCorrupt, Err: fmt.Errorf("%w: no containerId", errCorrupt)}
	}
	return &rec, nil
}

// missing says whether err means the file is not there: it does not
// exist, or a directory on its path is not a directory.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// makePilotDir creates the project's .pilot directory if it is missing,
// but never the project directory itself: a project deleted while its
// sandbox lives on must stay deleted.
func makePilotDir(project string) error {
	err := os.Mkdir(filepath.Join(project, pilotDir), 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// removeRecord deletes the record; a missing file is not an error.
func removeRecord(project string) error {
	err := os.Remove(sandboxFile(project))
	if err != nil && !missing(err) {
		return &FileError{Path: sandboxFile(project), Problem: FileUnwritable, Err: bare(err)}
	}
	return nil
}

// sameRecord says whether two records describe the same sandbox, whenever
// they were written.
func sameRecord(a, b sandboxRecord) bool {
	a.UpdatedAt, b.UpdatedAt = 0, 0
	return a == b
}

func recordExists(project string) bool {
	_, err := os.Stat(sandboxFile(project))
	return err == nil
}
