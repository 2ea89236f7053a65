package service

import (
	"context"
	"errors"
	"sync"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// A running container is a running sandbox only once its desktop answers
// (PROTOCOL.md, Readiness). A start by the sidecar waits for that itself;
// a container started or restarted outside it (docker start, docker
// restart, another process), or found running when the sidecar starts, is
// "starting" until a probe answers, and Run keeps probing it in the
// background so that the "running" event comes as soon as it is true.

// isReady says whether this run of the container is known to answer.
func (m *Manager) isReady(b *box, c Container) bool {
	r := b.runOf(c)
	b.mu.Lock()
	defer b.mu.Unlock()
	return r.ready
}

func (m *Manager) markReady(b *box, c Container) {
	r := b.runOf(c)
	b.mu.Lock()
	r.ready = true
	b.mu.Unlock()
}

// readiness returns how a running container's desktop is: ready (and now
// known to be), or not yet, in which case Run is asked to watch it. A run
// that never answered within ReadyTimeout has its reason in its run.
func (m *Manager) readiness(ctx context.Context, b *box, c Container) (ready bool) {
	if m.isReady(b, c) {
		return true
	}
	if ws := c.Ports[desktop.NoVNCPort]; ws != 0 {
		probeCtx, cancel := context.WithTimeout(ctx, desktop.ProbeTimeout)
		err := m.cfg.Probe(probeCtx, ws, c.Labels[LabelViewer])
		cancel()
		if err == nil {
			m.markReady(b, c)
			return true
		}
	}
	select {
	case m.unready <- b.project:
	default: // Run is busy or not running: the next resync asks again
	}
	return false
}

// watchReadiness runs, for each project it is told of, at most one wait
// for its desktop at a time, until ctx ends.
func (m *Manager) watchReadiness(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	watching := map[string]bool{}
	done := make(chan string)
	for {
		select {
		case <-ctx.Done():
			return
		case project := <-done:
			delete(watching, project)
		case project := <-m.unready:
			if watching[project] {
				continue
			}
			watching[project] = true
			wg.Go(func() {
				m.awaitReady(ctx, m.box(project))
				select {
				case done <- project:
				case <-ctx.Done():
				}
			})
		}
	}
}

// awaitReady waits for the project's running container to answer, then
// refreshes the project so that its state says so. If an operation holds
// the project meanwhile, it settles the state itself.
func (m *Manager) awaitReady(ctx context.Context, b *box) {
	c, err := m.find(ctx, b)
	if err != nil || !c.Running {
		return
	}
	ready, err := m.waitReady(ctx, b.project, c.ID, nil)
	switch {
	case err == nil:
		m.markReady(b, ready)
	case ctx.Err() != nil:
		return
	case errors.Is(err, errNotAnswering), errors.Is(err, desktop.ErrViewerMismatch):
		r := b.runOf(c)
		b.mu.Lock()
		r.unreadyWhy = err.Error()
		b.mu.Unlock()
	}
	if m.tryLockProject(b) {
		defer m.unlockProject(b)
		if _, err := m.refresh(ctx, b); err != nil {
			m.log.Debug().Err(err).Str("project", b.project).Msg("refresh after waiting for the desktop")
		}
	}
}
