package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/pilot-sandbox/pilot-sandbox/imagebuild"
)

// DefaultImage is the tag the sidecar builds its sandbox image under.
const DefaultImage = "pilot-sandbox:latest"

// buildLogLines is how much of the build output a failed build keeps.
const buildLogLines = 40

// EnsureImage builds the sandbox image unless an image with this binary's
// build hash exists, reporting progress for project (which may be "").
// Only one check or build runs at a time; others wait for it.
func (m *Manager) EnsureImage(ctx context.Context, project string) error {
	m.imageMu.Lock()
	defer m.imageMu.Unlock()
	labels, err := m.docker.ImageLabels(ctx, m.cfg.Image)
	switch {
	case err == nil && labels[LabelImageHash] == m.build.Hash:
		return nil
	case err != nil && !errors.Is(err, ErrImageNotFound):
		return fmt.Errorf("inspect image %s: %w", m.cfg.Image, err)
	}
	reason := "is missing"
	if err == nil {
		reason = "is out of date"
	}
	m.log.Info().Str("image", m.cfg.Image).Str("hash", m.build.Hash).Msg("building the sandbox image: it " + reason)
	m.progress(project, StageImage, fmt.Sprintf("Building the sandbox image %s (it %s)", m.cfg.Image, reason), 0, 0)

	tail := imagebuild.NewTail(buildLogLines)
	steps := imagebuild.NewSteps(func(msg string, cur, total int) { m.progress(project, StageImage, msg, cur, total) })
	err = m.docker.BuildImage(ctx, BuildSpec{
		Tag:       m.cfg.Image,
		Context:   bytes.NewReader(m.build.Tar),
		Labels:    map[string]string{LabelImageHash: m.build.Hash, LabelSandbox: "image"},
		BuildArgs: m.cfg.BuildArgs,
		Output: func(line string) {
			tail.Add(line)
			steps.Line(line)
			m.log.Debug().Str("build", line).Msg("image build")
		},
	})
	if err != nil {
		if errors.Is(err, ErrDockerUnavailable) || errors.Is(err, context.Canceled) {
			return err
		}
		return NewBuildError(tail.Lines(), err)
	}
	m.progress(project, StageImage, "Built the sandbox image "+m.cfg.Image, 0, 0)
	return nil
}
