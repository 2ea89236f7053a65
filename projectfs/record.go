package projectfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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

// recordName is the record's file in .pilot.
const recordName = "sandbox.json"

// SandboxFile is the project's .pilot/sandbox.json.
func SandboxFile(project string) string {
	return filepath.Join(project, Dir, recordName)
}

// WriteRecord saves the record atomically, creating .pilot/ if needed. A
// corrupt or unreadable file in its place is set aside first, never
// overwritten: the returned FileError says where it went. A file that is
// refused (a link, a device, too large) is left as it is, and so is the
// record: that is a FileError (FileRefused). A failure to write is a
// FileError (FileUnwritable) and leaves the old file as it was.
func WriteRecord(project string, rec Record, now time.Time) (aside *FileError, err error) {
	path := SandboxFile(project)
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	pilot, err := openPilot(project, true)
	if err != nil {
		return nil, fileErrorOf(path, err, FileUnwritable)
	}
	defer pilot.Close()
	removeStaleTemps(pilot.root, recordName, now)
	if _, err := readRecordIn(pilot); err != nil {
		if aside, err = setAsideBad(pilot, recordName, err, now); err != nil {
			return nil, err
		}
	}
	if err := writeFileAtomic(pilot.root, recordName, append(data, '\n'), 0o644); err != nil {
		return aside, &FileError{Path: path, Problem: FileUnwritable, Err: bare(err)}
	}
	ensureGitignore(pilot, now)
	return aside, nil
}

// gitignoreName is .pilot's own .gitignore.
const gitignoreName = ".gitignore"

// gitignore keeps the files of .pilot that are this machine's state out
// of the project's repository, where a git add -A would pick them up:
// the record, the temporary files of atomic writes, the copies of
// corrupt files set aside. settings.json and a Dockerfile there are the
// project's own.
const gitignore = `# Written by pilot-sandbox: the files here that are this machine's state,
# not the project's. settings.json and a Dockerfile here are the project's.
/sandbox.json
/.*.tmp-*
/*.corrupt-*
`

// ensureGitignore writes .pilot/.gitignore when there is none; one that
// is there, whatever it holds (the user's own edit, a link), is left as
// it is. It is a courtesy: a failure to write it fails nothing.
func ensureGitignore(pilot *pilotDir, now time.Time) {
	removeStaleTemps(pilot.root, gitignoreName, now) // of a write cut short
	if _, err := pilot.root.Lstat(gitignoreName); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	writeFileAtomic(pilot.root, gitignoreName, []byte(gitignore), 0o644)
}

// setAsideBad moves a file that readErr says is corrupt or unreadable out
// of the way and returns what it did, as a FileError with KeptAs. A file
// that is refused is not touched: readErr is returned as it is.
func setAsideBad(pilot *pilotDir, name string, readErr error, now time.Time) (*FileError, error) {
	var fe *FileError
	if !errors.As(readErr, &fe) || fe.Problem == FileRefused {
		return nil, readErr
	}
	kept, err := setAside(pilot.root, name, now)
	if err != nil {
		return nil, &FileError{Path: fe.Path, Problem: FileUnwritable, Err: fmt.Errorf("it is %s and cannot be moved aside: %w", fe.Problem, bare(err))}
	}
	fe.KeptAs = pilot.path(kept)
	return fe, nil
}

// ReadRecord loads the record. A missing file is (nil, nil); one that
// cannot be read, is refused, or is not a sandbox record, is a FileError.
func ReadRecord(project string) (*Record, error) {
	pilot, err := openPilot(project, false)
	if err != nil {
		if err = fileErrorOf(SandboxFile(project), err, FileUnreadable); missing(err) {
			return nil, nil
		}
		return nil, err
	}
	defer pilot.Close()
	return readRecordIn(pilot)
}

func readRecordIn(pilot *pilotDir) (*Record, error) {
	path := pilot.path(recordName)
	data, err := pilot.read(recordName)
	if err != nil {
		if err = fileErrorOf(path, err, FileUnreadable); missing(err) {
			return nil, nil
		}
		return nil, err
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

// RemoveRecord deletes the record; a missing file is not an error, a
// refused one (a link, say) is left as it is and is a FileError.
func RemoveRecord(project string) error {
	path := SandboxFile(project)
	pilot, err := openPilot(project, false)
	if err == nil {
		defer pilot.Close()
		_, err = pilot.lstat(recordName)
		if err == nil {
			err = pilot.root.Remove(recordName)
		}
	}
	if err != nil && !missing(err) {
		return fileErrorOf(path, err, FileUnwritable)
	}
	return nil
}

// SameRecord says whether two records describe the same sandbox, whenever
// they were written.
func SameRecord(a, b Record) bool {
	a.UpdatedAt, b.UpdatedAt = 0, 0
	return a == b
}

// RecordExists says whether the project has a .pilot/sandbox.json, of
// whatever kind, in a .pilot that is the project's own.
func RecordExists(project string) bool {
	pilot, err := openPilot(project, false)
	if err != nil {
		return false
	}
	defer pilot.Close()
	_, err = pilot.root.Lstat(recordName)
	return err == nil
}
