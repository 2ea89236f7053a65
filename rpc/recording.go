package rpc

import (
	"context"
	"errors"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/recording"
)

// Recordings is what sandbox/recording/* serve (docs/protocol.md,
// "Activity, recording, control"): the process's recorder
// (cmd/pilot-sandbox's sidecar).
type Recordings interface {
	Start(ctx context.Context, project string, fps int) (string, error)
	Stop(ctx context.Context, id string) (recording.Info, error)
	List(project string) ([]recording.Info, error)
}

// Params and results of sandbox/recording/*.
type (
	recordingStartParams struct {
		projectParams
		FPS int `json:"fps,omitempty" jsonschema:"Frames a second, 1 to 30 (5 when left out)."`
	}
	recordingParams struct {
		RecordingID string `json:"recordingId" jsonschema:"The recording's id, as sandbox/recording/start gave it."`
	}
	recordingStartResult struct {
		RecordingID string `json:"recordingId"`
	}
	recordingStopResult struct {
		Path       string         `json:"path"`
		DurationMs int64          `json:"durationMs"`
		Bytes      int64          `json:"bytes"`
		Recording  recording.Info `json:"recording"`
	}
	recordingListResult struct {
		Recordings []recording.Info `json:"recordings"`
	}
)

// TuneSchema bounds the frame rate.
func (recordingStartParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["fps"].Minimum, s.Properties["fps"].Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(recording.MaxFPS))
}

// TuneSchema bounds the id.
func (recordingParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["recordingId"].MinLength, s.Properties["recordingId"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(64)
}

// recordingMethods are the rows of sandbox/recording/*.
func (s *Server) recordingMethods(needsRunning []int64) []method {
	return []method{
		perSandbox(s.afterReconcile(mayFail(typed("sandbox/recording/start", "Records the running sandbox's desktop (WebM, VP9) into a file under the user's state directory, and answers with its id once it records; a sandbox that records already answers that recording's id. The first recording builds the recorder image, with sandbox/progress (stage image). It ends at stop, at its size bound (config.json recordingMaxBytes, 500 MiB), when the disk fills, when the sandbox stops, or when the sidecar exits; the file is playable up to there.", s.startRecording),
			append([]int64{codeImageBuildFailed}, needsRunning...)...))),
		typed("sandbox/recording/stop", "Ends a recording and answers once its file is complete: its path, length and size. A recording that ended already is answered as it is.", s.stopRecording),
		typed("sandbox/recording/list", "The project's recordings, newest first, with their state (recording, stopped, ended) and, for those that ended by themselves, why.", s.listRecordings),
	}
}

func (s *Server) startRecording(ctx context.Context, _ *session, p recordingStartParams) (recordingStartResult, error) {
	id, err := s.svc.Recordings.Start(ctx, string(p.ProjectPath), p.FPS)
	return recordingStartResult{RecordingID: id}, recordingError(err)
}

func (s *Server) stopRecording(ctx context.Context, _ *session, p recordingParams) (recordingStopResult, error) {
	info, err := s.svc.Recordings.Stop(ctx, p.RecordingID)
	return recordingStopResult{Path: info.Path, DurationMs: info.DurationMs, Bytes: info.Bytes, Recording: info}, recordingError(err)
}

func (s *Server) listRecordings(_ context.Context, _ *session, p projectParams) (recordingListResult, error) {
	list, err := s.svc.Recordings.List(string(p.ProjectPath))
	if list == nil {
		list = []recording.Info{}
	}
	return recordingListResult{Recordings: list}, err
}

// recordingError names the field a client got wrong.
func recordingError(err error) error {
	switch {
	case errors.Is(err, recording.ErrNotFound):
		return &args.Error{Field: "recordingId", Reason: err.Error()}
	case errors.Is(err, recording.ErrBadFPS):
		return &args.Error{Field: "fps", Reason: err.Error()}
	}
	return err
}
