package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ErrUnknownTool: tools/call named a tool that does not exist.
var ErrUnknownTool = errors.New("unknown tool")

// tool is one registered tool: its description, and what it does.
type tool interface {
	info() Tool
	call(ctx context.Context, project string, args json.RawMessage) Result
}

// Set is the agent tools of a sidecar.
type Set struct {
	tools  []tool
	byName map[string]tool
}

func newSet(list []tool) *Set {
	s := &Set{tools: list, byName: map[string]tool{}}
	for _, t := range list {
		s.byName[t.info().Name] = t
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

// Call runs the named tool for a project.
func (s *Set) Call(ctx context.Context, project, name string, args json.RawMessage) (Result, error) {
	t, ok := s.byName[name]
	if !ok {
		names := make([]string, 0, len(s.tools))
		for _, t := range s.tools {
			names = append(names, t.info().Name)
		}
		slices.Sort(names)
		return Result{}, fmt.Errorf("%w %q; the tools are %v", ErrUnknownTool, name, names)
	}
	return t.call(ctx, project, args), nil
}
