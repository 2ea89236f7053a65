package service

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// A container started outside the sidecar (or found running) is starting
// until its desktop answers, then running, announced by Run on its own; one
// that never answers is an error that says what to do.
func TestOutsideStartIsRunningOnlyOnceTheDesktopAnswers(t *testing.T) {
	var answering atomic.Bool
	var silentPort atomic.Int64
	h := newHarness(t, func(c *Config) {
		c.ResyncInterval = time.Hour
		c.ReadyTimeout = 500 * time.Millisecond
		c.Probe = func(_ context.Context, wsPort int, _, _ string) error {
			if answering.Load() && int64(wsPort) != silentPort.Load() {
				return nil
			}
			return errors.New("connection refused")
		}
	})
	answers, silent := project(t), project(t)
	h.docker.addContainer(answers, true, 0, desktop.Secret{Control: "ctrl1234", View: "view1234"})
	silentPort.Store(int64(h.docker.addContainer(silent, true, 0, desktop.Secret{Control: "ctrl1234", View: "view1234"}).Ports[desktop.NoVNCPort]))
	h.docker.events = make(chan ContainerEvent)
	h.run()

	want := map[string][]Status{answers: {StatusStarting, StatusRunning}, silent: {StatusStarting, StatusError}}
	got := map[string][]Status{}
	var silentErr string
	deadline := time.After(10 * time.Second)
	for len(got[answers]) < 2 || len(got[silent]) < 2 {
		select {
		case ev := <-h.events:
			if ev.Kind != EventState || ev.State == nil {
				continue
			}
			got[ev.Project] = append(got[ev.Project], ev.State.Status)
			if ev.Project == silent && ev.State.Status == StatusError {
				silentErr = ev.State.Error
			}
			if ev.Project == answers && ev.State.Status == StatusStarting {
				if ev.State.ViewerURL != "" || ev.State.WSPort != 0 {
					t.Errorf("a starting sandbox hands out its viewer: %+v", ev.State)
				}
				answering.Store(true) // the desktop comes up now
			}
		case <-deadline:
			t.Fatalf("events so far: %v", got)
		}
	}
	for project, statuses := range want {
		if strings.Join(statusNames(got[project][:2]), ",") != strings.Join(statusNames(statuses), ",") {
			t.Errorf("%s went through %v, want %v", project, got[project], statuses)
		}
	}
	if !strings.Contains(silentErr, "did not answer") || !strings.Contains(silentErr, "restart the sandbox") {
		t.Errorf("error of a desktop that never answered: %q", silentErr)
	}
}

func statusNames(s []Status) []string {
	var out []string
	for _, x := range s {
		out = append(out, string(x))
	}
	return out
}

// A command needs the container running, not the desktop's readiness: a
// running sandbox whose desktop does not answer (yet, or a probe slow
// under load) runs it, as docker exec would, and is not probed for it
// (issue 26: the CLI's exec failed with "not running (it is starting)").
func TestACommandDoesNotWaitForTheDesktop(t *testing.T) {
	var probes atomic.Int64
	h := newHarness(t, func(c *Config) {
		c.Probe = func(context.Context, int, string, string) error {
			probes.Add(1)
			return errors.New("connection refused")
		}
	})
	dir := project(t)
	c := h.docker.addContainer(dir, true, 0, desktop.Secret{Control: "ctrl1234", View: "view1234"})
	out, err := h.m.Exec(context.Background(), dir, ExecRequest{Argv: []string{"true"}})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("exec on a running sandbox whose desktop does not answer = %+v, %v", out, err)
	}
	if n := probes.Load(); n != 0 {
		t.Errorf("the exec probed the desktop %d times", n)
	}
	st, err := h.m.Status(context.Background(), dir)
	if err != nil || st == nil || st.Status != StatusStarting {
		t.Errorf("status after = %+v, %v; want starting (the desktop is not proven)", st, err)
	}
	h.docker.kill(c.ID, 0)
	if _, err := h.m.Exec(context.Background(), dir, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("exec on a stopped sandbox: err = %v, want ErrNotRunning", err)
	}
}
