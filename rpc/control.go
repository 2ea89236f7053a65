package rpc

import (
	"context"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
)

// Control is who holds the sandboxes' desktops (docs/activity.md,
// Control), shared by every sidecar of the user: *activity.Control is one.
type Control interface {
	State(project string) activity.ControlState
	Take(project string) error
	Renew(project string) error
	Release(project string) error
	// Listen hears every change of a holder until stop.
	Listen(fn func(activity.ControlState)) (stop func())
}

// held is the projects whose desktop a connection's user took: the
// connection renews the lease while it lasts, and gives control back as
// it ends.
type held struct {
	mu       sync.Mutex // guards projects
	projects map[string]bool
}

func (h *held) set(project string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.projects == nil {
		h.projects = map[string]bool{}
	}
	if on {
		h.projects[project] = true
	} else {
		delete(h.projects, project)
	}
}

func (h *held) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.projects))
	for p := range h.projects {
		out = append(out, p)
	}
	return out
}

func (s *Server) getControl(_ context.Context, _ *session, p projectParams) (activity.ControlState, error) {
	return s.svc.Control.State(canonical(p.project())), nil
}

func (s *Server) takeControl(ctx context.Context, sess *session, p projectParams) (activity.ControlState, error) {
	project := canonical(p.project())
	if err := s.svc.Control.Take(project); err != nil {
		return activity.ControlState{}, err
	}
	sess.held.set(project, true)
	s.userDid(ctx, project, "sandbox/control/take", "the user took over the desktop")
	return s.svc.Control.State(project), nil
}

func (s *Server) releaseControl(ctx context.Context, sess *session, p projectParams) (activity.ControlState, error) {
	project := canonical(p.project())
	sess.held.set(project, false)
	if err := s.svc.Control.Release(project); err != nil {
		return activity.ControlState{}, err
	}
	s.userDid(ctx, project, "sandbox/control/release", "the user gave the desktop back to the agent")
	return s.svc.Control.State(project), nil
}

// userDid records the user's action on the project's timeline.
func (s *Server) userDid(ctx context.Context, project, name, summary string) {
	if s.svc.Activity != nil {
		s.svc.Activity.Add(context.WithoutCancel(ctx), project, activity.Entry{
			Source: activity.SourceUser, Kind: activity.KindLifecycle, Name: name, Summary: summary,
		})
	}
}

// holdControl renews the leases of the desktops the connection's user
// holds, every third of a lease, until the returned stop, which gives them
// back: the panel's connection closed.
func (s *Server) holdControl(ctx context.Context, sess *session) (stop func()) {
	if s.svc.Control == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(activity.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, p := range sess.held.list() {
					s.svc.Control.Renew(p)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
		for _, p := range sess.held.list() {
			s.svc.Control.Release(p)
		}
	}
}

// listenControl makes the connection hear every change of a holder as
// sandbox/control; it returns the end of that.
func (s *Server) listenControl(sess *session) (stop func()) {
	if s.svc.Control == nil {
		return func() {}
	}
	return s.svc.Control.Listen(func(st activity.ControlState) { sess.notify(notice{"sandbox/control", st}) })
}
