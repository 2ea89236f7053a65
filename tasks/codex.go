package tasks

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Codex's `exec --json` writes one JSON event a line on stdout (the types
// are openai/codex's codex-rs/exec/src/exec_events.rs; testdata/codex
// holds real lines):
//
//   - thread.started, turn.started: not shown;
//   - item.started / item.completed {"item":{"id","type",...}}, type
//     agent_message {text}, reasoning {text}, command_execution {command,
//     aggregated_output, exit_code, status}, file_change {changes:[{path,
//     kind}], status}, mcp_tool_call {server, tool, arguments, result,
//     error, status}, web_search {query}, todo_list {items:[{text,
//     completed}]}, error {message}; item.updated: not shown;
//   - turn.completed {"usage":{"input_tokens","cached_input_tokens",
//     "output_tokens"}}, turn.failed {"error":{"message"}}, error
//     {"message"}.
//
// Codex reports no cost. A line that is not JSON, or of a type not listed,
// is a line event.

type codexParser struct {
	started map[string]bool // items whose tool event was sent at item.started
	turns   int
	sum     summary
}

type codexEvent struct {
	Type  string    `json:"type"`
	Item  codexItem `json:"item"`
	Usage struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	Error   struct{ Message string } `json:"error"`
	Message string                   `json:"message"`
}

type codexItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Message          string          `json:"message"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Status           string          `json:"status"`
	Changes          json.RawMessage `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           *struct {
		Content []claudeBlock `json:"content"`
	} `json:"result"`
	Error *struct{ Message string } `json:"error"`
	Query string                    `json:"query"`
	Items []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	} `json:"items"`
}

func (p *codexParser) line(stream, text string, length int) []Event {
	var e codexEvent
	if stream != "stdout" || length > len(text) || json.Unmarshal([]byte(text), &e) != nil {
		return []Event{lineEvent(stream, text, length)}
	}
	switch e.Type {
	case "thread.started", "turn.started", "item.updated":
		return nil
	case "item.started":
		return p.itemStarted(e.Item)
	case "item.completed":
		return p.itemCompleted(e.Item)
	case "turn.completed":
		p.turns++
		turns := p.turns
		p.sum.turns = &turns
		return []Event{{Type: TypeUsage, Body: &Usage{InputTokens: e.Usage.InputTokens, OutputTokens: e.Usage.OutputTokens, CachedInputTokens: e.Usage.CachedInputTokens}}}
	case "turn.failed":
		p.sum.err, _ = cut(e.Error.Message, maxText)
		return []Event{lineEvent("stderr", e.Error.Message, 0)}
	case "error":
		p.sum.err, _ = cut(e.Message, maxText)
		return []Event{lineEvent("stderr", e.Message, 0)}
	}
	return []Event{lineEvent(stream, text, length)}
}

// tool is the tool event of an item that is one, or nil.
func (p *codexParser) tool(it codexItem) *Tool {
	var name string
	var in any
	switch it.Type {
	case "command_execution":
		name, in = "command", map[string]string{"command": it.Command}
	case "mcp_tool_call":
		name, in = it.Server+"/"+it.Tool, it.Arguments
	case "web_search":
		name, in = "web_search", map[string]string{"query": it.Query}
	case "file_change":
		name, in = "file_change", map[string]json.RawMessage{"changes": it.Changes}
	default:
		return nil
	}
	raw, _ := json.Marshal(in)
	return &Tool{Name: name, Input: input(raw), CallID: it.ID}
}

func (p *codexParser) itemStarted(it codexItem) []Event {
	t := p.tool(it)
	if t == nil {
		return nil
	}
	p.started[it.ID] = true
	return []Event{{Type: TypeTool, Body: t}}
}

func (p *codexParser) itemCompleted(it codexItem) []Event {
	switch it.Type {
	case "agent_message", "plan":
		return []Event{textEvent(it.Text, false)}
	case "reasoning":
		return []Event{textEvent(it.Text, true)}
	case "todo_list":
		return []Event{textEvent(todoText(it), false)}
	case "error":
		return []Event{lineEvent("stderr", it.Message, 0)}
	}
	t := p.tool(it)
	if t == nil {
		return nil
	}
	var out []Event
	if !p.started[it.ID] {
		out = append(out, Event{Type: TypeTool, Body: t})
	}
	delete(p.started, it.ID)
	output, failed := itemOutput(it)
	return append(out, toolResultEvent(t.Name, it.ID, output, failed))
}

// itemOutput is what a finished tool item gave back, and whether it failed.
func itemOutput(it codexItem) (string, bool) {
	failed := it.Status == "failed" || it.Status == "declined"
	switch it.Type {
	case "command_execution":
		return it.AggregatedOutput, failed || it.ExitCode != nil && *it.ExitCode != 0
	case "mcp_tool_call":
		if it.Error != nil {
			return it.Error.Message, true
		}
		if it.Result != nil {
			return blocksText(it.Result.Content), failed
		}
	case "file_change":
		var changes []struct{ Path, Kind string }
		json.Unmarshal(it.Changes, &changes)
		lines := make([]string, 0, len(changes))
		for _, c := range changes {
			lines = append(lines, c.Kind+" "+c.Path)
		}
		return strings.Join(lines, "\n"), failed
	}
	return "", failed
}

func todoText(it codexItem) string {
	var b strings.Builder
	for _, t := range it.Items {
		mark := " "
		if t.Completed {
			mark = "x"
		}
		fmt.Fprintf(&b, "[%s] %s\n", mark, t.Text)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (p *codexParser) summary() summary { return p.sum }
