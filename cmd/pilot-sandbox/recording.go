package main

import (
	"cmp"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/recording"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// newRecorder is the process's recorder (docs/recording.md): recordings
// under the user's state directory, bounded by config.json's
// recordingMaxBytes, read at each start.
func newRecorder(m *service.Manager, docker *engine.Client, log zerolog.Logger) *recording.Recorder {
	return recording.New(m, docker, recording.Config{
		Dir:   filepath.Join(stateDir(), "recordings"),
		Scope: cmp.Or(os.Getenv(envScope), service.DefaultScope),
		MaxBytes: func() int64 {
			policy, _, _ := m.Policy()
			return policy.RecordingMaxBytes
		},
		Logger: log,
	})
}
