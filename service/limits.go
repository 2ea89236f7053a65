package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	units "github.com/docker/go-units"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// projectLimits reads the project's sandbox settings and the engine's
// capacity, and returns the settings with the container limits they make.
// A settings file that is refused (a link, say) counts as absent, and is
// reported.
func (m *Manager) projectLimits(ctx context.Context, b *box) (projectfs.Config, Limits, error) {
	project := b.project
	pc, err := projectfs.ReadConfig(project)
	var fe *projectfs.FileError
	if errors.Is(err, projectfs.ErrRefused) && errors.As(err, &fe) {
		fe.Effect = "the sandbox gets the default settings"
		m.warn(b, fe.Path, fe)
		err = nil
	}
	if err != nil {
		return pc, Limits{}, err
	}
	if ask, ok := limitsAsk(pc, m.caps()); ok {
		if err := m.require(project, ask); err != nil {
			return pc, Limits{}, err
		}
	}
	capacity, err := m.docker.Capacity(ctx)
	if err != nil {
		return pc, Limits{}, err
	}
	limits, err := limitsFor(pc, m.cfg.Limits, capacity, projectfs.SettingsFile(project))
	return pc, limits, err
}

// applyLimits brings a stopped container's memory, CPU and process limits
// in line with the project's settings before it starts, so that a change
// needs only a restart. A settings file that cannot be read leaves the
// container as it is (and is reported); a setting that is wrong fails the
// start, as it would a creation.
func (m *Manager) applyLimits(ctx context.Context, b *box, c Container) error {
	pc, want, err := m.projectLimits(ctx, b)
	var fe *projectfs.FileError
	switch {
	case errors.As(err, &fe):
		fe.Effect = "the sandbox starts with the limits it had"
		m.warn(b, fe.Path, fe)
		return nil
	case err != nil:
		return err
	}
	if err := m.checkMadeNetwork(b, pc, c); err != nil {
		return err
	}
	m.noteCreationOnly(b, pc, c)
	m.noteImageChange(ctx, b, pc, c)
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
func (m *Manager) noteCreationOnly(b *box, pc projectfs.Config, c Container) {
	const how = "; remove the sandbox (its files go with it) to make one with it"
	if pc.Display != nil && desktop.Display(*pc.Display) != displayOf(c, m.cfg.Display) {
		have := displayOf(c, m.cfg.Display)
		m.progress(b.project, StageStart, fmt.Sprintf("The display size in settings.json (%dx%d) applies to a new sandbox: this one keeps %dx%d%s",
			pc.Display.Width, pc.Display.Height, have.Width, have.Height, how), 0, 0)
	}
	if pc.ShmSize != nil && c.Limits.ShmBytes > 0 {
		if n, _ := projectfs.ParseSize(*pc.ShmSize); n != c.Limits.ShmBytes {
			m.progress(b.project, StageStart, fmt.Sprintf("The shmSize in settings.json (%s) applies to a new sandbox: this one keeps %s%s",
				*pc.ShmSize, units.BytesSize(float64(c.Limits.ShmBytes)), how), 0, 0)
		}
	}
}

// limits are the container limits for the project: defaults, replaced by
// its settings, within what the engine has. A default the engine cannot
// give (2 CPUs on a one-CPU engine) is lowered to what it has; a setting
// it cannot give is a projectfs.ConfigError.
func limitsFor(c projectfs.Config, defaults Limits, capacity Capacity, file string) (Limits, error) {
	l := defaults
	if capacity.CPUs > 0 && l.NanoCPUs > int64(capacity.CPUs)*1e9 {
		l.NanoCPUs = int64(capacity.CPUs) * 1e9
	}
	if c.Memory != nil {
		l.MemoryBytes, _ = projectfs.ParseSize(*c.Memory) // checked when read
		if capacity.MemoryBytes > 0 && l.MemoryBytes > capacity.MemoryBytes {
			return l, &projectfs.ConfigError{File: file, Field: "sandbox.memory",
				Reason: fmt.Sprintf("is %s, more than the Docker engine's %s", *c.Memory, units.BytesSize(float64(capacity.MemoryBytes)))}
		}
	}
	if c.CPUs != nil {
		l.NanoCPUs = int64(*c.CPUs * 1e9)
		if capacity.CPUs > 0 && *c.CPUs > float64(capacity.CPUs) {
			return l, &projectfs.ConfigError{File: file, Field: "sandbox.cpus",
				Reason: fmt.Sprintf("is %g, more than the Docker engine's %d", *c.CPUs, capacity.CPUs)}
		}
	}
	if c.Processes != nil {
		l.PidsLimit = *c.Processes
	}
	if c.ShmSize != nil {
		l.ShmBytes, _ = projectfs.ParseSize(*c.ShmSize)
	}
	if l.ShmBytes > l.MemoryBytes {
		// /dev/shm's pages count against the memory limit: a larger one
		// would promise what the sandbox cannot have.
		return l, &projectfs.ConfigError{File: file, Field: "sandbox.shmSize",
			Reason: fmt.Sprintf("is %s, more than the sandbox's memory (%s)", units.BytesSize(float64(l.ShmBytes)), units.BytesSize(float64(l.MemoryBytes)))}
	}
	return l, nil
}

// describeLimits is how logs and messages put a set of limits.
func describeLimits(l Limits) string {
	return fmt.Sprintf("memory %s, CPUs %s, processes %d, /dev/shm %s",
		units.BytesSize(float64(l.MemoryBytes)), strconv.FormatFloat(float64(l.NanoCPUs)/1e9, 'g', 3, 64),
		l.PidsLimit, units.BytesSize(float64(l.ShmBytes)))
}
