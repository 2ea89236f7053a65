package ports

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// CloseForward stops forwarding the project's port, and ends its
// connections; false if it was not forwarded.
func (f *forwarder) CloseForward(project string, port int) (bool, error) {
	project, err := projectfs.Canonical(project)
	if err != nil {
		return false, err
	}
	f.ops.Lock()
	defer f.ops.Unlock()
	kept := false
	err = f.store.Change(project, func(list []projectfs.Forward) ([]projectfs.Forward, error) {
		n := len(list)
		list = slices.DeleteFunc(list, func(p projectfs.Forward) bool { return p.Port == port })
		kept = len(list) < n
		return list, nil
	})
	if err != nil {
		return false, err
	}
	l := f.liveListener(project, port)
	if l != nil && !l.inner {
		f.drop(project, l)
	}
	f.mu.Lock()
	if set := f.projects[project]; set != nil {
		delete(set.errs, port)
		delete(set.carried, port)
	}
	f.mu.Unlock()
	return kept || (l != nil && !l.inner), nil
}

// ForwardedPorts lists the project's forwarded ports, by port, with why
// one is not in effect in its running sandbox.
func (f *forwarder) ForwardedPorts(project string) ([]Forwarded, error) {
	if canonical, err := projectfs.Canonical(project); err == nil {
		project = canonical
	}
	list, err := f.store.Read(project)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	set := f.projects[project]
	out := make([]Forwarded, 0, len(list))
	for _, p := range list {
		fw := Forwarded{Port: p.Port, HostPort: p.HostPort}
		if set != nil {
			fw.Error = set.errs[p.Port]
		}
		out = append(out, fw)
	}
	return out, nil
}

// apply puts the project's forwards in effect in its sandbox's current
// run, if it runs, and ends the listeners of any other run.
func (f *forwarder) apply(ctx context.Context, project string) {
	f.ops.Lock()
	defer f.ops.Unlock()
	t, ok, err := f.target(ctx, project)
	if !ok {
		if err != nil {
			f.log.Warn().Err(err).Str("project", project).Msg("could not apply the forwarded ports")
		}
		return
	}
	set := f.prepare(project, t.Run())
	if set == nil {
		return
	}
	list, err := f.store.Read(project)
	if err != nil {
		f.log.Warn().Err(err).Str("project", project).Msg("could not read the forwarded ports")
		return
	}
	for _, p := range list {
		if f.innerListener(project, p.Port) {
			f.failed(project, set, p.Port, errInner(p.Port))
			continue
		}
		if f.liveListener(project, p.Port) != nil {
			continue
		}
		l, err := f.startListener(ctx, t, Forwarded{Port: p.Port, HostPort: p.HostPort})
		switch {
		case errors.Is(err, errCarried):
			f.carriedElsewhere(project, set, p.Port)
		case err != nil:
			f.failed(project, set, p.Port, err)
		default:
			f.setLive(project, set, l)
		}
	}
	if len(list) > 0 {
		f.log.Info().Str("project", project).Int("ports", len(list)).Msg("forwarded the host ports into the sandbox")
	}
}

// failed records why a forward could not be applied.
func (f *forwarder) failed(project string, set *forwardSet, port int, err error) {
	why := err.Error()
	if errors.Is(err, errInUse) {
		why = "another program listens on the port in the sandbox"
	}
	f.log.Warn().Err(err).Str("project", project).Int("port", port).Msg("could not forward a host port into the sandbox")
	f.mu.Lock()
	set.errs[port] = why
	delete(set.carried, port)
	f.mu.Unlock()
}

// stopProject ends the project's listeners: its sandbox stopped.
func (f *forwarder) stopProject(project string) {
	f.mu.Lock()
	set := f.projects[project]
	delete(f.projects, project)
	f.mu.Unlock()
	if set != nil {
		for _, l := range set.live {
			l.close()
		}
	}
}

// restore applies the project's forwards again once the engine answers
// after a listener was lost with its connection: the sandbox ran on, and
// its forwards must too. It tries every second at first, up to every
// 10 s, and ends once it could ask whether the sandbox runs (and applied
// them if it does), or the forwarder stops.
func (f *forwarder) restore(project string) {
	for delay := time.Second; ; delay = min(2*delay, 10*time.Second) {
		select {
		case <-f.quit:
			return
		case <-time.After(delay):
		}
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		_, ok, err := f.target(ctx, project)
		if err == nil && ok {
			f.apply(ctx, project)
		}
		cancel()
		if err == nil {
			return
		}
	}
}

// running applies the project's forwards to its sandbox's run, in the
// background (a start, or one found running).
func (f *forwarder) running(project string) {
	f.applies.Go(func() { f.apply(context.Background(), project) })
}

// closeAll ends every listener, once the applies under way are done,
// and applies no more.
func (f *forwarder) closeAll() {
	f.mu.Lock()
	if !f.stopped {
		close(f.quit)
	}
	f.stopped = true
	f.mu.Unlock()
	f.applies.Wait()
	f.mu.Lock()
	projects := slices.Collect(maps.Keys(f.projects))
	f.mu.Unlock()
	for _, p := range projects {
		f.stopProject(p)
	}
}

func (l *listener) setHostPort(port int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.HostPort = port
}

func (l *listener) hostPort() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.HostPort
}
