package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A command that may carry a sandbox's network (exec, for as long as it
// runs: the process that carries a sandbox's proxy hears its questions)
// asks them on the terminal it runs on, one at a time:
//
//	allow example.org:443 for `curl https://example.org`? [o]nce / [s]ession / [a]lways / [d]eny
//
// Without a terminal it does not listen, and the broker denies each
// question at once with "no one to ask".

// askOnTerminal asks the project's questions on the process's terminal,
// if it has one, until the returned stop: while a command runs, this
// process may carry the sandbox's network.
func (c *cli) askOnTerminal(ctx context.Context) (stop func()) {
	project, err := projectfs.Canonical(c.project)
	if err != nil {
		return func() {}
	}
	tty := openTerminal()
	if tty == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	askOnTerminal(ctx, c.net.broker, project, tty, tty)
	return func() { cancel(); tty.Close() }
}

// maxTerminalQueue bounds the questions waiting for the terminal; past it
// a question waits for another listener, or its expiry.
const maxTerminalQueue = 16

// askOnTerminal asks the project's questions on tty (reading lines from
// in, writing prompts to out) until ctx ends. in is read by a goroutine
// that ends with in (a terminal the process leaves is closed with it).
func askOnTerminal(ctx context.Context, b *permission.Broker, project string, in io.Reader, out io.Writer) {
	questions := make(chan permission.Question, maxTerminalQueue)
	resolved := make(chan string, maxTerminalQueue)
	stop := b.Listen(project, func(e permission.Event) {
		switch { // never block the broker
		case e.Asked != nil:
			select {
			case questions <- *e.Asked:
			default:
			}
		case e.Resolved != nil:
			select {
			case resolved <- e.Resolved.ID:
			default:
			}
		}
	})
	lines := make(chan string)
	go readLines(ctx, in, lines) // ends with in, or at its next line after ctx
	go func() {
		defer stop()
		t := &terminalAsker{broker: b, lines: lines, resolved: resolved, out: out}
		for {
			select {
			case <-ctx.Done():
				return
			case q := <-questions:
				t.ask(ctx, q)
			case _, ok := <-t.lines:
				// typed while nothing was asked: it answers nothing
				if !ok {
					t.lines = nil
				}
			}
		}
	}()
}

// readLines sends in's lines until it ends or ctx does.
func readLines(ctx context.Context, in io.Reader, lines chan<- string) {
	defer close(lines)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		select {
		case lines <- sc.Text():
		case <-ctx.Done():
			return
		}
	}
}

type terminalAsker struct {
	broker   *permission.Broker
	lines    <-chan string
	resolved <-chan string
	out      io.Writer
}

// ask puts one question until it is answered here, resolved elsewhere
// (another client, its expiry), or ctx ends.
func (t *terminalAsker) ask(ctx context.Context, q permission.Question) {
	fmt.Fprint(t.out, prompt(q))
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-t.resolved:
			if id == q.ID {
				fmt.Fprintln(t.out, "\n(answered elsewhere, or no longer waiting)")
				return
			}
		case line, ok := <-t.lines:
			if !ok {
				t.lines = nil
				fmt.Fprintln(t.out, "\n(no terminal to answer on)")
				return
			}
			a, valid := parseTerminalAnswer(line)
			if !valid {
				fmt.Fprint(t.out, "answer o, s, a or d (d REASON to say why): ")
				continue
			}
			if err := t.broker.Answer(q.ID, a); err != nil {
				fmt.Fprintf(t.out, "not taken: %v\n", err)
			}
			return
		}
	}
}

// prompt is the question as one line.
func prompt(q permission.Question) string {
	what := q.Summary
	if d, ok := q.Detail.(networkDetail); ok {
		what = q.Rule
		if d.Process != nil && d.Process.Command != "" {
			what += fmt.Sprintf(" for `%s`", clipLine(d.Process.Command))
		} else if c, ok := q.Cause.(*netpolicy.Cause); ok && c.Exec != "" {
			what += fmt.Sprintf(" for `%s`", clipLine(c.Exec))
		}
	}
	return fmt.Sprintf("\npilot-sandbox: allow %s? [o]nce / [s]ession / [a]lways / [d]eny ", what)
}

// clipLine keeps a command from the sandbox to one short line.
func clipLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// parseTerminalAnswer reads "o", "session", "a", "d not now", ...
func parseTerminalAnswer(line string) (permission.Answer, bool) {
	word, reason, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch strings.ToLower(word) {
	case "o", "once":
		return permission.Answer{Decision: permission.AllowOnce}, true
	case "s", "session":
		return permission.Answer{Decision: permission.AllowSession}, true
	case "a", "always":
		return permission.Answer{Decision: permission.AllowAlways}, true
	case "d", "deny":
		return permission.Answer{Decision: permission.Deny, Reason: strings.TrimSpace(reason)}, true
	}
	return permission.Answer{}, false
}

// openTerminal is the process's terminal for questions, or nil when it
// has none (then no one is asked).
func openTerminal() *os.File {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return f
}
