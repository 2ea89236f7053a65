package service

import (
	"context"
	"errors"
	"fmt"
)

// refreshBounded is refresh with its inspect bounded by InspectTimeout,
// for the resync's walk over every sandbox. A container wedged in the
// engine (a pause that landed on an exec starting, docs/sandbox.md,
// Pause) leaves every inspect of it hanging: the walk notes that sandbox
// as failing, with why, and goes on to the others.
func (m *Manager) refreshBounded(ctx context.Context, b *box) (*State, error) {
	inspect, cancel := context.WithTimeout(ctx, m.cfg.InspectTimeout)
	c, err := m.find(inspect, b)
	cancel()
	if err != nil && ctx.Err() == nil && errors.Is(inspect.Err(), context.DeadlineExceeded) {
		m.unanswered(b, err)
		return nil, err
	}
	return m.refreshWith(ctx, b, c, err)
}

// unanswered marks the sandbox as failing: Docker did not say what its
// container is within InspectTimeout. The next resync asks again.
func (m *Manager) unanswered(b *box, err error) {
	why := fmt.Sprintf("Docker did not answer about the sandbox's container within %s; "+
		"a container paused while a command started in it can stay wedged (docs/sandbox.md, Pause)",
		m.cfg.InspectTimeout)
	m.log.Warn().Err(err).Str("project", b.project).Msg(why)
	if st := b.snapshot(); st != nil && (st.Status != StatusError || st.Error != why) {
		failed := *st
		failed.Status, failed.Error = StatusError, why
		m.commit(b, &failed)
	}
}
