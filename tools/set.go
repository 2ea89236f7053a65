package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// ErrUnknownTool: tools/call named a tool that does not exist.
var ErrUnknownTool = errors.New("unknown tool")

// tool is one registered tool: its description, and what it does.
type tool interface {
	info() Tool
	call(ctx context.Context, js *jobs, project string, args json.RawMessage) Result
	check(args json.RawMessage) error
	addTo(srv *mcp.Server, js *jobs, project string)
}

// Set is the agent tools of a sidecar.
type Set struct {
	tools  []tool
	byName map[string]tool
	jobs   *jobs
}

// Option changes how a Set runs its tools.
type Option func(*Set)

// Bound sets how long a call takes at most to answer (AnswerBound unless
// set); past it, the call answers that it goes on in the background. 0
// makes every call wait for its end, as a person at a shell expects.
func Bound(d time.Duration) Option { return func(s *Set) { s.jobs.bound = d } }

func newSet(sb Sandbox, opts ...Option) *Set {
	js := newJobs(AnswerBound)
	s := &Set{tools: definitions(sb, js), byName: map[string]tool{}, jobs: js}
	for _, t := range s.tools {
		s.byName[t.info().Name] = t
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// List returns every tool, in a fixed order.
func (s *Set) List() []Tool {
	out := make([]Tool, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t.info())
	}
	return out
}

// Names are the tools' names, in List's order.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t.info().Name)
	}
	return out
}

// Call runs the named tool for a project.
func (s *Set) Call(ctx context.Context, project, name string, args json.RawMessage) (Result, error) {
	t, err := s.lookup(name)
	if err != nil {
		return Result{}, err
	}
	// One project, one key: a start joins a start however its path was spelled.
	if canonical, err := projectfs.Canonical(project); err == nil {
		project = canonical
	}
	return t.call(ctx, s.jobs, project, args), nil
}

func (s *Set) lookup(name string) (tool, error) {
	t, ok := s.byName[name]
	if !ok {
		names := s.Names()
		slices.Sort(names)
		return nil, fmt.Errorf("%w %q; the tools are %v", ErrUnknownTool, name, names)
	}
	return t, nil
}

// Close stops the calls left running in the background and waits for them
// to end. Calls after Close are refused.
func (s *Set) Close() { s.jobs.close() }
