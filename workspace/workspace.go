// Package workspace keeps a copy of a project's files in its sandbox's
// /workspace, and brings a task's change back out (docs/tasks.md).
//
// It owns: the listing of the project (what git would list; every file
// outside a repository; never .git internals or .pilot/), the manifest of
// what the sandbox holds (per container, in the user's state: path, stat,
// git blob id), the stream that makes /workspace match the project (only
// what changed, by content), and the reading of a task's commit: its diff,
// and apply, the only code that writes the host project, which refuses to
// overwrite a file the user changed since the task's base.
//
// The in-container half is resources/workspace/workspace.py, which keeps
// /workspace a git repository: the base of a sync and a task's change are
// commits there. Everything read from the sandbox is hostile: bounded,
// its paths checked, its blobs checked against their ids.
//
// It declares the one thing it needs of a sandbox (Sandbox: its container
// and an exec); it knows nothing of tasks, JSON-RPC, Docker or service.
package workspace

import (
	"context"
	"errors"
	"io"
	"time"
)

// Dir is where the project's copy lives in a sandbox.
const Dir = "/workspace"

// Sandbox is the running sandbox a workspace lives in.
type Sandbox interface {
	// ContainerID names the sandbox's container. A container made anew
	// (the sandbox removed and started again) has an empty /workspace, so
	// the manifest is kept per container.
	ContainerID() string
	// Exec runs a command in the sandbox as its user and waits for it.
	Exec(ctx context.Context, cmd Command) (Result, error)
}

// Command is a command to run in a sandbox: argv, no shell.
type Command struct {
	Argv  []string
	Env   []string // NAME=value, added to the sandbox user's
	Stdin io.Reader
	// Stdout, when set, takes the output as it comes (Result.Stdout stays
	// empty); otherwise Result.Stdout keeps the first MaxOutput bytes.
	Stdout    io.Writer
	MaxOutput int
	// Timeout bounds the whole command; zero means ctx alone.
	Timeout time.Duration
}

// Result is how a command ended.
type Result struct {
	ExitCode       int
	Stdout, Stderr []byte
	Truncated      bool
	TimedOut       bool
}

// Options are what a Workspace needs besides its sandbox.
type Options struct {
	// Program is the source of the in-container program
	// (resources.WorkspaceProgram).
	Program []byte
	// StateDir is where manifests are kept (the user's state directory).
	StateDir string
}

// Workspace is one project's copy in one sandbox. Its methods must not run
// concurrently for one sandbox: the caller serializes them.
type Workspace struct {
	sandbox Sandbox
	project string
	opts    Options
}

// New returns the workspace of project (a canonical absolute path) in
// sandbox.
func New(sandbox Sandbox, project string, opts Options) *Workspace {
	return &Workspace{sandbox: sandbox, project: project, opts: opts}
}

// Errors callers tell apart (rpc maps them to codes).
var (
	// ErrConflict: apply found files the user changed since the task's
	// base (a *ConflictError names them); nothing was written.
	ErrConflict = errors.New("the project's files changed since the task's base")
	// ErrUnsafe: the task's change names a path apply must not write (out
	// of the project, into .git or .pilot, through a link); nothing was
	// written.
	ErrUnsafe = errors.New("the task's change reaches outside the project")
	// ErrNotSynced: the sandbox's workspace has no base yet.
	ErrNotSynced = errors.New("the project was never synced into this sandbox")
	// ErrBadPath: a path given by the caller is not one of the change's.
	ErrBadPath = errors.New("not a path the task changed")
)

// WriteError is apply failing to write the project (read-only, full, moved
// away): Path names where, and nothing was written unless HalfMade.
type WriteError struct {
	Path     string
	HalfMade bool
	Err      error
}

func (e *WriteError) Error() string { return e.Err.Error() }

func (e *WriteError) Unwrap() error { return e.Err }

// ConflictError names every path whose host content differs from the
// task's base.
type ConflictError struct {
	Paths []string
}

func (e *ConflictError) Error() string {
	return ErrConflict.Error() + ": " + joinPaths(e.Paths, 10)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// UnsafeError says which path of a change apply refused, and why.
type UnsafeError struct {
	Path, Reason string
}

func (e *UnsafeError) Error() string {
	return ErrUnsafe.Error() + ": " + quote(e.Path) + " " + e.Reason
}

func (e *UnsafeError) Unwrap() error { return ErrUnsafe }
