package service

import (
	"context"

	"github.com/pilot-sandbox/pilot-sandbox/images"
)

// EnsureRecorder makes sure of the recorder image (package recording) and
// returns its tag; report hears each step of a build (nil: none).
func (m *Manager) EnsureRecorder(ctx context.Context, report images.Report) (string, error) {
	return m.images.EnsureRecorder(ctx, report)
}
