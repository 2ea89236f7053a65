package projectfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrFile: a file in the project's .pilot directory cannot be read or
// written. See FileError.
var ErrFile = errors.New("project file unusable")

// ErrRefused: a file of .pilot, or .pilot itself, is not used because it
// is not a regular file (or directory) inside the project of at most
// MaxFileSize: a link, a device, a pipe, or too large. Reading treats it
// as absent; writing refuses. Every such FileError is an ErrRefused.
var ErrRefused = errors.New("not a regular file of the project")

// errCorrupt marks a file that exists but cannot be used as it is.
var errCorrupt = errors.New("corrupt file")

// missing says whether err means the file is not there: it does not
// exist, or a directory on its path is not a directory.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// FileProblem is what is wrong with a file in a project's .pilot directory.
type FileProblem string

const (
	// FileCorrupt: the file is there but is not what it should be (not a
	// JSON object, truncated, wrong types).
	FileCorrupt FileProblem = "corrupt"
	// FileUnreadable: the file is there but cannot be read (permissions,
	// a directory in its place, an I/O error).
	FileUnreadable FileProblem = "unreadable"
	// FileUnwritable: the file cannot be written (a read-only or full
	// file system, permissions). What was there is unchanged.
	FileUnwritable FileProblem = "unwritable"
	// FileRefused: the file, or .pilot, is a symbolic link, a device, a
	// pipe or larger than MaxFileSize. It is neither read (it counts as
	// absent) nor written through, nor set aside.
	FileRefused FileProblem = "refused"
)

// FileError is a file of the project's .pilot directory that cannot be
// used. It is an ErrFile.
type FileError struct {
	Path    string
	Problem FileProblem
	// KeptAs is where a corrupt or unreadable file was moved, when the
	// sidecar had to write the file anew.
	KeptAs string
	// Effect says what the sidecar does meanwhile, for the message.
	Effect string
	Err    error
}

func (e *FileError) Error() string {
	if e.Effect != "" {
		return e.describe() + "; " + e.Effect
	}
	return e.describe()
}

func (e *FileError) describe() string {
	switch {
	case e.KeptAs != "":
		return fmt.Sprintf("%s was %s (%v): kept it as %s and started a new one", e.Path, e.Problem, e.Err, e.KeptAs)
	case e.Problem == FileCorrupt:
		return fmt.Sprintf("%s is not valid (%v): fix it, or move it away to start afresh", e.Path, e.Err)
	case e.Problem == FileRefused:
		return fmt.Sprintf("refused %s: %v; the sidecar uses only regular files of at most %s in the project's own .pilot directory (remove or replace it)", e.Path, e.Err, sizeOf(MaxFileSize))
	case e.Problem == FileUnreadable:
		return fmt.Sprintf("cannot read %s: %v", e.Path, e.Err)
	case errors.Is(e.Err, syscall.ENOSPC):
		return fmt.Sprintf("cannot write %s: the disk is full; the file is unchanged (free some space)", e.Path)
	case errors.Is(e.Err, syscall.EROFS):
		return fmt.Sprintf("cannot write %s: the file system is read-only; the file is unchanged", e.Path)
	case errors.Is(e.Err, fs.ErrPermission):
		return fmt.Sprintf("cannot write %s: permission denied; the file is unchanged", e.Path)
	default:
		return fmt.Sprintf("cannot write %s: %v; the file is unchanged", e.Path, e.Err)
	}
}

func (e *FileError) Unwrap() []error {
	if e.Problem == FileRefused {
		return []error{ErrFile, ErrRefused, e.Err}
	}
	return []error{ErrFile, e.Err}
}

// bare strips the path (often a temporary file's) from an operating
// system error, which a FileError names itself: "no space left on device".
func bare(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}
