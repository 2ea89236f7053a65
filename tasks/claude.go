package tasks

import (
	"encoding/json"
	"strings"
)

// Claude Code's `-p --output-format stream-json --verbose` writes one JSON
// object a line on stdout (testdata/claude holds real ones):
//
//   - {"type":"system","subtype":"init",...} and other system notices
//     (status, hooks), rate_limit_event, stream_event: not shown;
//   - {"type":"assistant","message":{"content":[BLOCK...]}}, each block
//     {"type":"text","text"}, {"type":"thinking","thinking"} or
//     {"type":"tool_use","id","name","input"};
//   - {"type":"user","message":{"content":[{"type":"tool_result",
//     "tool_use_id","content","is_error"}]}}, content a string or a list
//     of {"type":"text","text"} (and images); a user message whose content
//     is a string (an interruption) is not shown;
//   - last, {"type":"result","subtype","is_error","num_turns",
//     "total_cost_usd","usage":{"input_tokens","output_tokens",
//     "cache_read_input_tokens",...},"result"}.
//
// A line that is not JSON, or of a type not listed, is a line event: a
// format that changes shows up instead of vanishing.

type claudeParser struct {
	names map[string]string // tool_use id -> tool name, for its result
	sum   summary
}

// maxToolNames bounds the ids kept to name tool results.
const maxToolNames = 10000

type claudeMessage struct {
	Type    string `json:"type"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	// result
	Subtype      string   `json:"subtype"`
	IsError      bool     `json:"is_error"`
	NumTurns     *int     `json:"num_turns"`
	TotalCostUsd *float64 `json:"total_cost_usd"`
	Result       string   `json:"result"`
	Usage        struct {
		InputTokens         int64 `json:"input_tokens"`
		OutputTokens        int64 `json:"output_tokens"`
		CacheReadInputToken int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (p *claudeParser) line(stream, text string, length int) []Event {
	var m claudeMessage
	if stream != "stdout" || length > len(text) || json.Unmarshal([]byte(text), &m) != nil {
		return []Event{lineEvent(stream, text, length)}
	}
	switch m.Type {
	case "assistant":
		return p.assistant(m)
	case "user":
		return p.user(m)
	case "result":
		return p.result(m)
	case "system", "rate_limit_event", "stream_event", "control_request", "control_response":
		return nil
	}
	return []Event{lineEvent(stream, text, length)}
}

func (p *claudeParser) assistant(m claudeMessage) []Event {
	var blocks []claudeBlock
	if json.Unmarshal(m.Message.Content, &blocks) != nil {
		return nil
	}
	var out []Event
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, textEvent(b.Text, false))
		case "thinking":
			if b.Thinking != "" {
				out = append(out, textEvent(b.Thinking, true))
			}
		case "tool_use":
			if len(p.names) < maxToolNames {
				p.names[b.ID] = b.Name
			}
			out = append(out, Event{Type: TypeTool, Body: &Tool{Name: b.Name, Input: input(b.Input), CallID: b.ID}})
		}
	}
	return out
}

func (p *claudeParser) user(m claudeMessage) []Event {
	var blocks []claudeBlock
	if json.Unmarshal(m.Message.Content, &blocks) != nil {
		return nil // a string: the prompt, or an interruption
	}
	var out []Event
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		name := p.names[b.ToolUseID]
		delete(p.names, b.ToolUseID)
		out = append(out, toolResultEvent(name, b.ToolUseID, resultText(b.Content), b.IsError))
	}
	return out
}

// resultText is a tool result's content as text: a string, or the texts
// of its blocks (an image is named, not carried).
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []claudeBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	return blocksText(blocks)
}

// blocksText joins the texts of content blocks, naming the others.
func blocksText(blocks []claudeBlock) string {
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

func (p *claudeParser) result(m claudeMessage) []Event {
	p.sum.costUsd, p.sum.turns = m.TotalCostUsd, m.NumTurns
	if m.IsError {
		p.sum.err = m.Result
		if p.sum.err == "" {
			p.sum.err = m.Subtype
		}
		p.sum.err, _ = cut(p.sum.err, maxText)
	}
	return []Event{{Type: TypeUsage, Body: &Usage{
		InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens,
		CachedInputTokens: m.Usage.CacheReadInputToken, CostUsd: m.TotalCostUsd,
	}}}
}

func (p *claudeParser) summary() summary { return p.sum }
