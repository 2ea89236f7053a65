package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A sandbox outlives its project's directory when the directory is
// deleted or moved: an orphan, which only a remove by its project's old
// path (Remove) or by its container (RemoveContainer) can delete short of
// docker rm.

// Orphans lists the sandboxes whose project directory is gone.
func (m *Manager) Orphans(ctx context.Context) ([]State, error) {
	all, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []State
	for _, st := range all {
		if projectfs.Gone(st.ProjectPath) {
			out = append(out, st)
		}
	}
	return out, nil
}

// RemoveContainer deletes a sandbox named by its container's ID (or name),
// whatever became of its project: its project's state goes with it, as
// with Remove. It reports whether there was a container to delete; one
// that is not a sandbox of this manager's scope is refused (an
// ArgumentError on containerId).
func (m *Manager) RemoveContainer(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, &ArgumentError{Name: "containerId", Reason: "must not be empty"}
	}
	c, err := m.docker.InspectContainer(ctx, id)
	switch {
	case errors.Is(err, ErrContainerNotFound):
		return false, nil
	case err != nil:
		return false, err
	case c.Labels[LabelSandbox] != m.cfg.Scope:
		return false, &ArgumentError{Name: "containerId", Reason: fmt.Sprintf("%s is not a pilot-sandbox sandbox (no %s=%s label)", id, LabelSandbox, m.cfg.Scope)}
	}
	project := c.Labels[LabelProject]
	if project == "" || c.Name != ContainerName(project) {
		// A copy made by hand: no project's state is its.
		if err := m.docker.RemoveContainer(ctx, c.ID); err != nil && !errors.Is(err, ErrContainerNotFound) {
			return false, fmt.Errorf("remove container: %w", err)
		}
		m.log.Info().Str("container", c.ID).Msg("removed a sandbox container that belongs to no project")
		return true, nil
	}
	b, err := m.lockBox(ctx, project)
	if err != nil {
		return false, err
	}
	defer m.unlockProject(b)
	return m.remove(ctx, b)
}
