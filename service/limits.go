package service

import (
	"context"
	"errors"
	"fmt"

	units "github.com/docker/go-units"
)

// projectLimits reads the project's sandbox settings and the engine's
// capacity, and returns the settings with the container limits they make.
func (m *Manager) projectLimits(ctx context.Context, project string) (ProjectConfig, Limits, error) {
	pc, err := readProjectConfig(project)
	if err != nil {
		return pc, Limits{}, err
	}
	capacity, err := m.docker.Capacity(ctx)
	if err != nil {
		return pc, Limits{}, err
	}
	limits, err := pc.limits(m.cfg.Limits, capacity, settingsFile(project))
	return pc, limits, err
}

// applyLimits brings a stopped container's memory, CPU and process limits
// in line with the project's settings before it starts, so that a change
// needs only a restart. A settings file that cannot be read leaves the
// container as it is (and is reported); a setting that is wrong fails the
// start, as it would a creation.
func (m *Manager) applyLimits(ctx context.Context, b *box, c Container) error {
	pc, want, err := m.projectLimits(ctx, b.project)
	var fe *FileError
	switch {
	case errors.As(err, &fe):
		fe.Effect = "the sandbox starts with the limits it had"
		m.warn(b, fe.Path, fe)
		return nil
	case err != nil:
		return err
	}
	m.noteCreationOnly(b, pc, c)
	want.ShmBytes = c.Limits.ShmBytes // fixed at creation
	if want == c.Limits {
		return nil
	}
	if err := m.docker.UpdateLimits(ctx, c.ID, want); err != nil {
		return fmt.Errorf("apply the project's limits (%s): %w", describeLimits(want), err)
	}
	m.log.Info().Str("project", b.project).Str("limits", describeLimits(want)).Msg("applied the project's limits")
	m.progress(b.project, StageStart, "Applied the project's limits: "+describeLimits(want), 0, 0)
	return nil
}

// noteCreationOnly says, in the start's progress, which settings the
// container cannot take without being made anew.
func (m *Manager) noteCreationOnly(b *box, pc ProjectConfig, c Container) {
	const how = "; remove the sandbox (its files go with it) to make one with it"
	if pc.Display != nil && *pc.Display != m.displayOf(c) {
		have := m.displayOf(c)
		m.progress(b.project, StageStart, fmt.Sprintf("The display size in settings.json (%dx%d) applies to a new sandbox: this one keeps %dx%d%s",
			pc.Display.Width, pc.Display.Height, have.Width, have.Height, how), 0, 0)
	}
	if pc.ShmSize != nil && c.Limits.ShmBytes > 0 {
		if n, _ := parseSize(*pc.ShmSize); n != c.Limits.ShmBytes {
			m.progress(b.project, StageStart, fmt.Sprintf("The shmSize in settings.json (%s) applies to a new sandbox: this one keeps %s%s",
				*pc.ShmSize, units.BytesSize(float64(c.Limits.ShmBytes)), how), 0, 0)
		}
	}
}
