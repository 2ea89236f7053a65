package tasks

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Event is one thing that happened in a task (docs/protocol.md, "Tasks"):
// Type names it, TimeMs is when (milliseconds since the task started), and
// Body, one of the types below, says what. As JSON it is one object: type,
// timeMs and the body's fields.
type Event struct {
	Type   string
	TimeMs int64
	Body   any
}

// Event types.
const (
	TypeStarted    = "started"
	TypeText       = "text"
	TypeTool       = "tool"
	TypeToolResult = "toolResult"
	TypeLine       = "line"
	TypeUsage      = "usage"
	TypeFinished   = "finished"
)

// Started: the task's program runs.
type Started struct {
	Agent string   `json:"agent"`
	Argv  []string `json:"argv"`
	Base  string   `json:"base"`
}

// Text is the agent's words; Reasoning marks its thinking.
type Text struct {
	Text      string `json:"text"`
	Reasoning bool   `json:"reasoning,omitempty"`
	Cut       bool   `json:"cut,omitempty"`
}

// Tool is a tool the agent uses, with its input (JSON; a string preview
// when it is larger than maxInput).
type Tool struct {
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	CallID string          `json:"callId,omitempty"`
}

// ToolResult is what a tool gave back.
type ToolResult struct {
	Name    string `json:"name"`
	Output  string `json:"output"`
	IsError bool   `json:"isError"`
	CallID  string `json:"callId,omitempty"`
	Cut     bool   `json:"cut,omitempty"`
}

// Line is a line of output the sidecar does not parse (all of a command
// task's output; an agent's stderr and what it prints that is not its
// JSON). Cut, when set, is the line's whole length in bytes.
type Line struct {
	Stream string `json:"stream"`
	Text   string `json:"text"`
	Cut    int    `json:"cut,omitempty"`
}

// Usage is what the agent reports of its tokens and cost.
type Usage struct {
	InputTokens       int64    `json:"inputTokens"`
	OutputTokens      int64    `json:"outputTokens"`
	CachedInputTokens int64    `json:"cachedInputTokens,omitempty"`
	CostUsd           *float64 `json:"costUsd,omitempty"`
	// Requests and Source: a usage the model gateway counted
	// (SourceGateway), for all of the task's model calls, sent once as
	// it ends, before finished.
	Requests int64  `json:"requests,omitempty"`
	Source   string `json:"source,omitempty"`
}

// Finished is how the task ended.
type Finished struct {
	// Status is succeeded, failed, cancelled, timed_out, or lost (its
	// run ended without saying how: the container stopped, or its
	// supervisor was killed).
	Status     string   `json:"status"`
	ExitCode   int      `json:"exitCode"`
	DurationMs int64    `json:"durationMs"`
	CostUsd    *float64 `json:"costUsd,omitempty"`
	Turns      *int     `json:"turns,omitempty"`
	// Error says why the agent or the task failed, when it said.
	Error string `json:"error,omitempty"`
	// DroppedLines counts output lines past the flood bound: they are in
	// the task's output file in the sandbox only.
	DroppedLines int `json:"droppedLines,omitempty"`
	// Commit is the task's change, saved (refs/pilot/tasks/ID).
	Commit string `json:"commit,omitempty"`
}

// Statuses of a task.
const (
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusTimedOut  = "timed_out"
	StatusLost      = "lost"
)

// MarshalJSON writes the event as one object.
func (e Event) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		Type   string `json:"type"`
		TimeMs int64  `json:"timeMs"`
	}{e.Type, e.TimeMs})
	if err != nil || e.Body == nil {
		return head, err
	}
	body, err := json.Marshal(e.Body)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(body, []byte("{}")) {
		return head, nil
	}
	return append(append(head[:len(head)-1], ','), body[1:]...), nil
}

// Bounds on what an event carries: the panel shows a transcript, and the
// sandbox's own files keep everything.
const (
	maxText   = 64 << 10
	maxOutput = 16 << 10
	maxInput  = 32 << 10
	maxLine   = 16 << 10
	// maxPreview is how much of a larger input is kept, as a string.
	maxPreview = 4 << 10
)

// cut keeps the first max bytes of s (not splitting a character), and says
// whether it dropped any.
func cut(s string, max int) (string, bool) {
	s = string(bytes.ToValidUTF8([]byte(s), []byte("\uFFFD")))
	if len(s) <= max {
		return s, false
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end], true
}

// input is a tool's input as an event carries it: the JSON itself, or a
// string of its first maxPreview bytes when it is larger than maxInput.
func input(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if len(raw) <= maxInput && json.Valid(raw) {
		return raw
	}
	preview, _ := cut(string(raw), maxPreview)
	out, _ := json.Marshal(preview + "…")
	return out
}
