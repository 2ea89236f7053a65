package service

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// The sentinel errors of the sandbox domain. Adapters (the JSON-RPC server, the
// command line) decide what each means to their users with errors.Is and
// errors.As; nothing matches on message text.
var (
	// ErrDockerUnavailable: no Docker engine answers at the configured endpoint.
	ErrDockerUnavailable = errors.New("docker is not available")
	// ErrNotRunning: the operation needs a running sandbox.
	ErrNotRunning = errors.New("sandbox is not running")
	// ErrNoBrowser: sandbox/browser on a sandbox whose image has no browser,
	// or a browser image asked of a sidecar that has none to build.
	ErrNoBrowser = images.ErrNoBrowser
	// ErrPaused: the operation needs a running sandbox, and the
	// project's is paused. It is also an ErrNotRunning.
	ErrPaused = fmt.Errorf("%w: it is paused, every window kept: resume it with sandbox/start (pilot-sandbox start, or the sandbox_start tool)", ErrNotRunning)
	// ErrNoSandbox: the project has no sandbox at all. It is also an ErrNotRunning.
	ErrNoSandbox = fmt.Errorf("%w: the project has no sandbox", ErrNotRunning)
	// ErrImageBuild: the sandbox image could not be built. See LogError.
	ErrImageBuild = errors.New("sandbox image build failed")
	// ErrStartFailed: the container did not become ready. See LogError.
	ErrStartFailed = errors.New("sandbox did not start")
	// ErrTimeout: a Docker operation did not finish in time.
	ErrTimeout = errors.New("docker operation timed out")
	// ErrInvalidProject: the project path is not an absolute path to an
	// existing directory. See projectfs.PathError.
	ErrInvalidProject = projectfs.ErrInvalidPath
	// ErrContainerNotFound is returned by a Docker implementation when the
	// container does not exist (any more).
	ErrContainerNotFound = errors.New("container not found")
	// ErrImageNotFound is returned by a Docker implementation when the image
	// does not exist.
	ErrImageNotFound = images.ErrNotFound
	// ErrNameConflict is returned by a Docker implementation when a container
	// with the requested name already exists.
	ErrNameConflict = errors.New("container name already in use")
	// ErrInvalidArgument: an argument of a service call is out of range.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrProjectFile: a file in the project's .pilot directory cannot be
	// read or written. See projectfs.FileError.
	ErrProjectFile = projectfs.ErrFile
	// ErrAgent: the desktop agent refused or failed a request, for a reason
	// a model can act on (an unknown key name, say).
	ErrAgent = desktop.ErrAgent
	// ErrNotFound: no such file or directory in the sandbox. See
	// sandboxfs.NotFoundError.
	ErrNotFound = sandboxfs.ErrNotFound
	// ErrNeedsApproval: the project's repository content asks for what the
	// user has not approved (a Dockerfile, limits above the caps). See
	// ApprovalError.
	ErrNeedsApproval = errors.New("needs the user's approval")
	// ErrPortInUse is returned by a Docker implementation when the engine
	// could not publish a port because something else holds it.
	ErrPortInUse = errors.New("host port in use")
)

// LogError is a failure that comes with the last lines of the log that
// explains it: an image build's output (ErrImageBuild), or that of a
// container whose desktop did not start (ErrStartFailed).
type LogError struct {
	Kind error  // ErrImageBuild or ErrStartFailed
	Op   string // what failed, for the message
	Log  []string
	Err  error
}

// NewBuildError is an image build that failed, with its last output.
func NewBuildError(log []string, err error) *LogError {
	return &LogError{Kind: ErrImageBuild, Op: "build sandbox image", Log: log, Err: err}
}

// NewStartError is a container that did not become ready, with its last output.
func NewStartError(log []string, err error) *LogError {
	return &LogError{Kind: ErrStartFailed, Op: "start sandbox", Log: log, Err: err}
}

func (e *LogError) Error() string {
	msg := e.Op + ": " + e.Err.Error()
	if len(e.Log) > 0 {
		msg += " (last output: " + lastLine(e.Log) + ")"
	}
	return msg
}

func (e *LogError) Unwrap() []error { return []error{e.Kind, e.Err} }

// imageErr is a failure of the images as callers know it: a build that
// failed (images.BuildError) is a LogError of ErrImageBuild, unless the
// engine was not there to build.
func imageErr(err error) error {
	var be *images.BuildError
	switch {
	case !errors.As(err, &be):
		return err
	case errors.Is(be.Err, ErrDockerUnavailable):
		return be.Err
	}
	return NewBuildError(be.Log, be.Err)
}

// ArgumentError names the argument of a service call that is out of range.
type ArgumentError struct {
	Name   string
	Reason string
}

func (e *ArgumentError) Error() string { return e.Name + ": " + e.Reason }

func (e *ArgumentError) Unwrap() error { return ErrInvalidArgument }

// UnavailableError is ErrDockerUnavailable with what to do about it.
type UnavailableError struct {
	Endpoint string
	Err      error
	// Advice, when set, is what to do instead of the advice for a local
	// engine (an engine over ssh: its connection, its keys).
	Advice string
}

func (e *UnavailableError) Error() string {
	if e.Advice != "" {
		return fmt.Sprintf("Docker at %s is not reachable: %v: %s", e.Endpoint, e.Err, e.Advice)
	}
	return fmt.Sprintf("Docker is not running or not reachable at %s: start Docker Desktop or dockerd, or set DOCKER_HOST (%v)", e.Endpoint, e.Err)
}

func (e *UnavailableError) Unwrap() []error { return []error{ErrDockerUnavailable, e.Err} }

func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s
		}
	}
	return ""
}
