package service

import "context"

// EnsureRecorder makes sure of the recorder image (package recording) and
// returns its tag. A build reports sandbox/progress (stage image) for the
// project that asked; a failed build is a LogError of ErrImageBuild, as a
// sandbox image's is.
func (m *Manager) EnsureRecorder(ctx context.Context, project string) (string, error) {
	tag, err := m.images.EnsureRecorder(ctx, func(msg string, current, total int) {
		m.progress(project, StageImage, msg, current, total)
	})
	return tag, imageErr(err)
}
