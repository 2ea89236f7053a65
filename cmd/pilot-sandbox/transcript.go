package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pilot-sandbox/pilot-sandbox/tasks"
)

// heardTasks keeps the task events this process hears, from before a
// task's start returns (its first events may come first) until stop.
type heardTasks struct {
	mu     sync.Mutex // guards queue
	queue  []tasks.Notification
	signal chan struct{} // a notification came
	stop   func()
}

func (c *cli) listenTasks() *heardTasks {
	h := &heardTasks{signal: make(chan struct{}, 1)}
	h.stop = c.tasks.Listen(func(n tasks.Notification) {
		h.mu.Lock()
		h.queue = append(h.queue, n)
		h.mu.Unlock()
		select {
		case h.signal <- struct{}{}:
		default:
		}
	})
	return h
}

// next is the next notification heard; false when ctx ended first.
func (h *heardTasks) next(ctx context.Context) (tasks.Notification, bool) {
	for {
		h.mu.Lock()
		if len(h.queue) > 0 {
			n := h.queue[0]
			h.queue = h.queue[1:]
			h.mu.Unlock()
			return n, true
		}
		h.mu.Unlock()
		select {
		case <-h.signal:
		case <-ctx.Done():
			return tasks.Notification{}, false
		}
	}
}

// follow shows task id's events until it finishes, and returns how. An
// interrupt (ctx ends) cancels the task; its events go on showing until
// its end.
func (c *cli) follow(ctx context.Context, heard *heardTasks, id string) tasks.Finished {
	t := transcript{out: c.env.stdout, errOut: c.env.stderr, json: c.json}
	for {
		n, ok := heard.next(ctx)
		if !ok {
			fmt.Fprintf(c.env.stderr, "pilot-sandbox task run: cancelling task %s\n", id)
			go c.tasks.Cancel(context.Background(), id) // its end comes as an event
			ctx = context.Background()
			continue
		}
		if n.TaskID != id {
			continue
		}
		t.show(n)
		if fin, ok := n.Event.Body.(*tasks.Finished); ok {
			return *fin
		}
	}
}

// transcript shows a task's events the way a person reads them, or as
// JSON lines. A command's lines come out as it wrote them (stdout and
// stderr), so task run of a command reads like running it.
type transcript struct {
	out, errOut io.Writer
	json        bool
}

// maxShown bounds what the transcript shows of a tool's input or output.
const maxShown = 300

func (t transcript) show(n tasks.Notification) {
	if t.json {
		line, _ := json.Marshal(n)
		fmt.Fprintf(t.out, "%s\n", line)
		return
	}
	switch b := n.Event.Body.(type) {
	case *tasks.Started:
		fmt.Fprintf(t.errOut, "task %s: %s (base %s)\n", n.TaskID, strings.Join(b.Argv, " "), short7(b.Base))
	case *tasks.Line:
		w := t.out
		if b.Stream == "stderr" {
			w = t.errOut
		}
		fmt.Fprintln(w, b.Text)
	case *tasks.Text:
		if b.Reasoning {
			fmt.Fprintf(t.out, "(thinking) %s\n", b.Text)
		} else {
			fmt.Fprintln(t.out, b.Text)
		}
	case *tasks.Tool:
		fmt.Fprintf(t.out, "> %s %s\n", b.Name, clip(string(b.Input)))
	case *tasks.ToolResult:
		mark := "<"
		if b.IsError {
			mark = "< error:"
		}
		fmt.Fprintf(t.out, "%s %s %s\n", mark, b.Name, clip(b.Output))
	case *tasks.Usage:
		fmt.Fprintf(t.errOut, "usage: %d tokens in (%d cached), %d out%s\n", b.InputTokens, b.CachedInputTokens, b.OutputTokens, cost(b.CostUsd))
	case *tasks.Finished:
		t.showEnd(n.TaskID, b)
	}
}

func (t transcript) showEnd(id string, b *tasks.Finished) {
	line := fmt.Sprintf("task %s %s (exit %d) in %s", id, b.Status, b.ExitCode, (time.Duration(b.DurationMs) * time.Millisecond).Round(10*time.Millisecond))
	if b.Turns != nil {
		line += fmt.Sprintf(", %d turns", *b.Turns)
	}
	line += cost(b.CostUsd)
	if b.Error != "" {
		line += ": " + b.Error
	}
	fmt.Fprintln(t.errOut, line)
	if b.DroppedLines > 0 {
		fmt.Fprintf(t.errOut, "%d lines of output past the flood bound are in ~/.pilot-tasks/%s/output in the sandbox\n", b.DroppedLines, id)
	}
	if b.Commit != "" {
		fmt.Fprintf(t.errOut, "its change, if any: pilot-sandbox task diff %s (and task apply %s)\n", id, id)
	}
}

func cost(usd *float64) string {
	if usd == nil {
		return ""
	}
	return fmt.Sprintf(", $%.4f", *usd)
}

// clip is text on one line, at most maxShown bytes of it.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxShown {
		return s
	}
	n := maxShown
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
