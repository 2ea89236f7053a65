package images

import (
	"context"
	"errors"
	"fmt"
)

// RecorderTag is the recorder image's tag for a desktop image tag:
// pilot-sandbox:latest -> pilot-sandbox-recorder:latest.
func RecorderTag(desktop string) string {
	repo, tag := splitTag(desktop)
	return repo + "-recorder:" + tag
}

// EnsureRecorder makes sure of the recorder image (ffmpeg on the desktop
// image, run by package recording beside a sandbox) and of the desktop
// image below it, and returns its tag. It is built only when a recording
// first asks for it: most users never record, and it adds ffmpeg's
// libraries (docs/recording.md).
func (b *Builder) EnsureRecorder(ctx context.Context, report Report) (string, error) {
	if b.recorder.Tar == nil {
		return "", errors.New("this sidecar has no recorder image to build")
	}
	report = report.orNothing()
	b.mu.Lock()
	defer b.mu.Unlock()
	all := []image{
		{tag: b.cfg.Tag, build: b.desktop, args: b.cfg.BuildArgs},
		{tag: b.cfg.RecorderTag, build: b.recorder, args: map[string]string{"DESKTOP": b.cfg.Tag}},
	}
	for _, img := range all {
		if err := b.ensureOne(ctx, img, report); err != nil {
			return "", fmt.Errorf("the recorder image: %w", err)
		}
	}
	return b.cfg.RecorderTag, nil
}
