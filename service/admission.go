package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrTooManySandboxes: a start would run more sandboxes than the policy's
// maxRunning. See TooManyError.
var ErrTooManySandboxes = errors.New("too many sandboxes running")

// RunningSandbox names a sandbox that counts against maxRunning, so that
// the user can pick one to stop.
type RunningSandbox struct {
	ProjectPath   string `json:"projectPath"`
	ContainerID   string `json:"containerId,omitempty"`
	ContainerName string `json:"containerName"`
}

// TooManyError is ErrTooManySandboxes with the sandboxes that run.
type TooManyError struct {
	Max     int
	Running []RunningSandbox
}

func (e *TooManyError) Error() string {
	projects := make([]string, len(e.Running))
	for i, r := range e.Running {
		projects[i] = r.ProjectPath
	}
	running := fmt.Sprintf("%d sandboxes already run", len(e.Running))
	if len(e.Running) == 1 {
		running = "1 sandbox already runs"
	}
	return fmt.Sprintf("%s, as many as maxRunning in config.json allows: stop one first (%s)", running, strings.Join(projects, ", "))
}

func (e *TooManyError) Unwrap() error { return ErrTooManySandboxes }

// admit lets a start of the project's stopped or missing sandbox go ahead
// if fewer than maxRunning others run (in Docker, or being started by this
// process), and counts it as running until release is called. Starts by
// other processes of the user between their admission and the engine's
// start are not seen: two at that very moment may both get in.
func (m *Manager) admit(ctx context.Context, b *box) (release func(), err error) {
	cfg, _ := m.currentPolicy()
	if cfg.MaxRunning == 0 {
		return func() {}, nil
	}
	p := m.policy
	p.admitMu.Lock()
	defer p.admitMu.Unlock()
	running, err := m.runningOthers(ctx, b.project)
	if err != nil {
		return nil, err
	}
	if len(running) >= cfg.MaxRunning {
		return nil, &TooManyError{Max: cfg.MaxRunning, Running: running}
	}
	p.pending[b.project] = true
	return func() {
		p.admitMu.Lock()
		delete(p.pending, b.project)
		p.admitMu.Unlock()
	}, nil
}

// runningOthers lists the sandboxes of other projects that run, or that
// this process is starting; the caller holds admitMu.
func (m *Manager) runningOthers(ctx context.Context, project string) ([]RunningSandbox, error) {
	containers, err := m.docker.ListContainers(ctx, scopeLabels(m.cfg.Scope))
	if err != nil {
		return nil, err
	}
	var out []RunningSandbox
	seen := map[string]bool{}
	for _, c := range containers {
		p := c.Labels[LabelProject]
		if !c.Running || p == "" || p == project || c.Name != ContainerName(p) {
			continue
		}
		seen[p] = true
		out = append(out, RunningSandbox{ProjectPath: p, ContainerID: c.ID, ContainerName: c.Name})
	}
	for p := range m.policy.pending {
		if p != project && !seen[p] {
			out = append(out, RunningSandbox{ProjectPath: p, ContainerName: ContainerName(p)})
		}
	}
	slices.SortFunc(out, func(a, b RunningSandbox) int { return strings.Compare(a.ProjectPath, b.ProjectPath) })
	return out, nil
}
