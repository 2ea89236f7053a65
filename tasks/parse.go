package tasks

// A parser turns a task's output lines into events: the agent's JSON
// stream (claude.go, codex.go) or, for a command, each line as it is. It
// keeps what the agent says of its cost, turns and failure for the
// finished event. A parser is used by one goroutine.
type parser interface {
	// line is one output line of stream ("stdout" or "stderr"): its
	// text, and its whole length when the runner cut it (0 otherwise).
	line(stream string, text string, length int) []Event
	// summary is what the agent reported of the whole task.
	summary() summary
}

// summary is what an agent reports at its end.
type summary struct {
	costUsd *float64
	turns   *int
	err     string
}

func newParser(agent string) parser {
	switch agent {
	case AgentClaude:
		return &claudeParser{names: map[string]string{}}
	case AgentCodex:
		return &codexParser{started: map[string]bool{}}
	}
	return lineParser{}
}

// lineParser makes each line a line event.
type lineParser struct{}

func (lineParser) line(stream, text string, length int) []Event {
	return []Event{lineEvent(stream, text, length)}
}

func (lineParser) summary() summary { return summary{} }

func lineEvent(stream, text string, length int) Event {
	l := Line{Stream: stream}
	var dropped bool
	l.Text, dropped = cut(text, maxLine)
	if length > len(text) || dropped {
		l.Cut = max(length, len(text))
	}
	return Event{Type: TypeLine, Body: &l}
}

func textEvent(text string, reasoning bool) Event {
	t := Text{Reasoning: reasoning}
	t.Text, t.Cut = cut(text, maxText)
	return Event{Type: TypeText, Body: &t}
}

func toolResultEvent(name, callID, output string, isError bool) Event {
	r := ToolResult{Name: name, CallID: callID, IsError: isError}
	r.Output, r.Cut = cut(output, maxOutput)
	return Event{Type: TypeToolResult, Body: &r}
}
