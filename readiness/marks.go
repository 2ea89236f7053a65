package readiness

import (
	"context"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Marks are what the user's processes proved of runs of containers, kept
// in the user's state (projectfs.RunMarks) so that the others (the CLI's
// status and exec beside the app's sidecar) take it as proved without
// proving it again, which under load can take longer than they may wait
// (issue 26). A run is named by its container's ID and its start time: a
// later run of the same container is proved again.
type Marks struct {
	answered *projectfs.RunMarks // its desktop answered as its own
	loaded   *projectfs.RunMarks // its network's rules were loaded
}

// A Carrier says whether a process of the user carries the proxy of a
// container's network now (egress; service.Network has it).
type Carrier interface {
	Carried(ctx context.Context, containerID string) (bool, error)
}

// NewMarks keeps the marks under stateDir ("" for none: nothing is kept,
// and nothing is proved).
func NewMarks(stateDir string) Marks {
	return Marks{
		answered: projectfs.NewRunMarks(stateDir, projectfs.MarkReady),
		loaded:   projectfs.NewRunMarks(stateDir, projectfs.MarkEgress),
	}
}

// MarkAnswered records that the run's desktop answered.
func (m Marks) MarkAnswered(id string, started time.Time) error { return m.answered.Mark(id, started) }

// Answered says whether a process of the user saw the run's desktop answer.
func (m Marks) Answered(id string, started time.Time) bool { return m.answered.Known(id, started) }

// MarkLoaded records that the run's network rules were loaded.
func (m Marks) MarkLoaded(id string, started time.Time) error { return m.loaded.Mark(id, started) }

// Carried says whether a process of the user loaded the run's network
// rules and one carries its proxy now (c).
func (m Marks) Carried(ctx context.Context, c Carrier, id string, started time.Time) bool {
	if !m.loaded.Known(id, started) {
		return false
	}
	carried, err := c.Carried(ctx, id)
	return err == nil && carried
}

// Proved says whether the user's processes proved all a run needs to be
// running: its desktop answered, and, for a run whose network is enforced
// (c, nil for one without), its rules are loaded with a process carrying
// its proxy.
func (m Marks) Proved(ctx context.Context, c Carrier, id string, started time.Time) bool {
	if !m.Answered(id, started) {
		return false
	}
	return c == nil || m.Carried(ctx, c, id, started)
}

// Forget drops the marks of the container's runs: it is gone.
func (m Marks) Forget(id string) {
	m.answered.Forget(id)
	m.loaded.Forget(id)
}
