package service

import (
	"context"

	"github.com/pilot-sandbox/pilot-sandbox/images"
)

// EnsureRecorder makes sure of the recorder image (package recording) and
// returns its tag; report hears each step of a build (nil: none). A
// failed build is a LogError of ErrImageBuild, as a sandbox image's is.
func (m *Manager) EnsureRecorder(ctx context.Context, report images.Report) (string, error) {
	tag, err := m.images.EnsureRecorder(ctx, report)
	return tag, imageErr(err)
}
