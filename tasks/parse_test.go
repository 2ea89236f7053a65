package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the parsers' golden files")

// TestParsers runs each captured output (testdata/README.md) through its
// agent's parser and compares the events and the summary with the golden
// file beside it.
func TestParsers(t *testing.T) {
	files, _ := filepath.Glob("testdata/*/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no captured output in testdata")
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			p := newParser(filepath.Base(filepath.Dir(file)))
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var events []Event
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				events = append(events, p.line("stdout", sc.Text(), 0)...)
			}
			sum := p.summary()
			got, err := json.MarshalIndent(map[string]any{
				"events":  events,
				"summary": map[string]any{"costUsd": sum.costUsd, "turns": sum.turns, "error": sum.err},
			}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(file, ".jsonl") + ".events.json"
			if *update {
				os.WriteFile(golden, append(got, '\n'), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if string(bytes.TrimSpace(want)) != string(got) {
				t.Errorf("events differ from %s:\n%s", golden, got)
			}
		})
	}
}

// TestParserEdges: what is not the agent's JSON stays a line, and what an
// event carries is bounded.
func TestParserEdges(t *testing.T) {
	big := `{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("a", 100<<10) + `"}]}}`
	for _, tc := range []struct {
		name, agent, stream, text string
		length                    int
		want                      string // the first event's type and a fragment of its JSON
	}{
		{"a command's line", AgentCommand, "stdout", `{"type":"result"}`, 0, `"type":"line"`},
		{"claude's stderr", AgentClaude, "stderr", "warning: something", 0, `"stream":"stderr"`},
		{"not json", AgentClaude, "stdout", "npm WARN deprecated", 0, `"text":"npm WARN deprecated"`},
		{"a type claude may add", AgentClaude, "stdout", `{"type":"brand_new"}`, 0, `"type":"line"`},
		{"a line the runner cut", AgentClaude, "stdout", `{"type":"assistant","mess`, 2 << 20, `"cut":2097152`},
		{"a long text", AgentClaude, "stdout", big, 0, `"cut":true`},
		{"codex's unknown event", AgentCodex, "stdout", `{"type":"item.plan.delta","item_id":"i","delta":"x"}`, 0, `"type":"line"`},
		{"codex's turn failing", AgentCodex, "stdout", `{"type":"turn.failed","error":{"message":"stream disconnected"}}`, 0, `"text":"stream disconnected"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := newParser(tc.agent).line(tc.stream, tc.text, tc.length)
			if len(evs) == 0 {
				t.Fatal("no event")
			}
			got, _ := json.Marshal(evs[0])
			if !strings.Contains(string(got), tc.want) || len(got) > maxText+1024 {
				t.Errorf("%s (%d bytes); want %s", got[:min(len(got), 300)], len(got), tc.want)
			}
		})
	}
}

// TestToolInputsAreBounded: a huge input (a Write of a large file) is a
// string preview.
func TestToolInputsAreBounded(t *testing.T) {
	line := `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Write","input":{"content":"` + strings.Repeat("x", 200<<10) + `"}}]}}`
	evs := newParser(AgentClaude).line("stdout", line, 0)
	tool := evs[0].Body.(*Tool)
	var preview string
	if err := json.Unmarshal(tool.Input, &preview); err != nil || len(preview) > maxPreview+8 {
		t.Errorf("input of %d bytes: %v", len(tool.Input), err)
	}
}
