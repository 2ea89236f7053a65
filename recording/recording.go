// Package recording records a sandbox's desktop into a video file on the
// host (docs/recording.md): sandbox/recording/start, stop and list
// (docs/protocol.md, "Activity, recording, control").
//
// A recording is a helper container of the recorder image (ffmpeg,
// resources/docker/recorder) in the sandbox's network namespace, where the
// display's abstract socket is, given the display's X cookie on its stdin;
// its stdout, WebM, is streamed to the host through the engine's API, so it
// works with a remote engine too, into
// <state dir>/recordings/<container name>/<id>.webm with <id>.json (Info)
// beside it. It owns the recordings' bounds (size, length), their files
// and their ends; it does not know the protocol, how an image is built
// (service.EnsureRecorder) or the sandbox's life beyond its state.
package recording

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Sandboxes is the part of the manager recording uses; *service.Manager
// is one.
type Sandboxes interface {
	Status(ctx context.Context, project string) (*service.State, error)
	ExecArgv(ctx context.Context, project string, spec service.ExecSpec) (service.ExecResult, error)
	// EnsureRecorder makes sure of the recorder image, reporting a build
	// as the project's progress.
	EnsureRecorder(ctx context.Context, project string) (string, error)
}

// Containers runs the recorders and finds them; *engine.Client is one.
type Containers interface {
	RunAttached(ctx context.Context, spec service.HelperSpec) (service.ExecSession, error)
	ListContainers(ctx context.Context, labels map[string]string) ([]service.Container, error)
}

// Defaults of Config.
const (
	DefaultMaxBytes    = 500 << 20
	DefaultMaxDuration = 4 * time.Hour
	DefaultFPS         = 5
	MaxFPS             = 30
)

// Labels of the recorder containers: they are not sandboxes.
const (
	LabelRecorder   = "pilot.recorder"         // the scope, like service.LabelSandbox
	LabelRecorderOf = "pilot.recorder.sandbox" // the sandbox container's ID
	LabelRecording  = "pilot.recorder.id"      // the recording's ID
)

// Config is how a Recorder records.
type Config struct {
	// Dir is where recordings go: <state dir>/recordings.
	Dir string
	// Scope is the sidecar's scope (service.Config.Scope).
	Scope string
	// MaxBytes bounds one recording's file, asked at each start
	// (DefaultMaxBytes when nil or 0): at the bound it ends, saying so.
	MaxBytes func() int64
	// MaxDuration bounds one recording's length (DefaultMaxDuration when 0).
	MaxDuration time.Duration
	Logger      zerolog.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
}

// States of a recording.
const (
	StateRecording = "recording"
	StateStopped   = "stopped" // by a stop
	StateEnded     = "ended"   // by itself: Info.Reason says why
)

// Info is a recording's facts: the answer of list, and the JSON beside
// its file.
type Info struct {
	ID            string `json:"recordingId"`
	ProjectPath   string `json:"projectPath"`
	ContainerName string `json:"containerName"`
	Path          string `json:"path"`
	MimeType      string `json:"mimeType"`
	FPS           int    `json:"fps"`
	State         string `json:"state"`
	// Reason says why a recording ended by itself (its size bound, the
	// disk, the sandbox's stop).
	Reason     string `json:"reason,omitempty"`
	StartedAt  int64  `json:"startedAt"`
	EndedAt    int64  `json:"endedAt,omitempty"`
	DurationMs int64  `json:"durationMs"`
	Bytes      int64  `json:"bytes"`
}

// Errors a client can act on.
var (
	ErrNotFound = errors.New("no such recording")
	ErrBadFPS   = fmt.Errorf("fps must be 1 to %d", MaxFPS)
	ErrClosed   = errors.New("the recorder is closed: the sidecar is exiting")
)

// Recorder runs the recordings of this process.
type Recorder struct {
	sandboxes Sandboxes
	docker    Containers
	cfg       Config

	startMu sync.Mutex // serializes starts: one recording per sandbox

	mu     sync.Mutex      // guards active, unsaved and closed
	active map[string]*run // by recording ID, until its end is written
	// unsaved are the facts of ended recordings whose .json could not be
	// written (a full disk), for List and Stop; at most maxUnsaved.
	unsaved map[string]Info
	closed  bool
}

// maxBytes is the size bound of a recording that starts now.
func (r *Recorder) maxBytes() int64 {
	if r.cfg.MaxBytes != nil {
		if n := r.cfg.MaxBytes(); n > 0 {
			return n
		}
	}
	return DefaultMaxBytes
}

// New returns a recorder; it starts nothing.
func New(sandboxes Sandboxes, docker Containers, cfg Config) *Recorder {
	if cfg.MaxDuration <= 0 {
		cfg.MaxDuration = DefaultMaxDuration
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Recorder{sandboxes: sandboxes, docker: docker, cfg: cfg, active: map[string]*run{}, unsaved: map[string]Info{}}
}
