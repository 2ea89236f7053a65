package sandboxfs

import (
	"errors"
	"fmt"
)

// ErrNotFound: no such file or directory in the sandbox (docs/protocol.md,
// Files: -32010 not_found). See NotFoundError.
var ErrNotFound = errors.New("no such file or directory in the sandbox")

// NotFoundError is ErrNotFound for one path.
type NotFoundError struct {
	Path string
}

func (e *NotFoundError) Error() string { return e.Path + ": " + ErrNotFound.Error() }

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// FieldError is a refusal that names the argument at fault: a path that
// is a directory where a file was asked for, data over the cap, a download
// that would replace a file, an archive from the sandbox that would write
// outside hostPath. Nothing was changed.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func refuse(field, format string, a ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...)}
}
