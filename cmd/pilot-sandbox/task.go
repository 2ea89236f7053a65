package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	units "github.com/docker/go-units"

	"github.com/pilot-sandbox/pilot-sandbox/tasks"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

const taskUsage = `usage: pilot-sandbox task run [--project DIR] [--agent claude|codex|command] [--timeout D] [--no-sync] [--json] PROMPT
       pilot-sandbox task run [--project DIR] [--timeout D] [--no-sync] [--json] -- PROGRAM ARGS...
       pilot-sandbox task list [--project DIR] [--json]
       pilot-sandbox task diff [--json] ID
       pilot-sandbox task apply ID [PATH...]`

// runSync makes the sandbox's /workspace hold the project's files, with
// the stream's progress on stderr.
func runSync(ctx context.Context, e *env, args []string) error {
	c, _, err := newCLI(e, "sync", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	prog := c.progressLine()
	res, err := c.tasks.Sync(ctx, c.project, prog.report)
	prog.end()
	if err != nil {
		return err
	}
	if c.json {
		c.printJSON(res)
		return nil
	}
	fmt.Fprintln(e.stdout, syncLine(res))
	return nil
}

// syncLine says what a sync did, the way a person reads it.
func syncLine(res workspace.Synced) string {
	what := "nothing changed"
	if res.Changed {
		what = fmt.Sprintf("%d sent (%s), %d removed", res.Sent, megabytes(res.SentBytes), res.Removed)
	}
	line := fmt.Sprintf("Synced %d files (%s) into /workspace: %s; base %s", res.Files, megabytes(res.Bytes), what, short7(res.Base))
	if res.Saved != "" {
		line += fmt.Sprintf("\nChanges found in the workspace that no task saved are kept on %s.", res.Saved)
	}
	return line
}

func megabytes(n int64) string { return units.HumanSize(float64(n)) }

func short7(id string) string { return id[:min(len(id), 7)] }

// progressLine shows a sync's progress on stderr: one line redrawn on a
// terminal, nothing elsewhere (a log would fill with it).
type progressLine struct {
	e      *env
	shown  bool
	tty    bool
	mu     sync.Mutex // guards shown: reports come from the stream's goroutine
	prefix string
}

func (c *cli) progressLine() *progressLine {
	return &progressLine{e: c.env, tty: isTerminal(c.env.stderr), prefix: "syncing"}
}

func (p *progressLine) report(pr workspace.Progress) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.e.stderr, "\r%s %d/%d files, %s of %s ", p.prefix, pr.Files, pr.TotalFiles, megabytes(pr.Bytes), megabytes(pr.TotalBytes))
	p.shown = true
}

// end clears the line, if one was drawn.
func (p *progressLine) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprintf(p.e.stderr, "\r%s\r", strings.Repeat(" ", 60))
		p.shown = false
	}
}

// runTask runs the task subcommands.
func runTask(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, taskUsage)
		return errUsage
	}
	switch args[0] {
	case "run":
		return runTaskRun(ctx, e, args[1:])
	case "list":
		return runTaskList(ctx, e, args[1:])
	case "diff":
		return runTaskDiff(ctx, e, args[1:])
	case "apply":
		return runTaskApply(ctx, e, args[1:])
	}
	fmt.Fprintf(e.stderr, "pilot-sandbox task: unknown %q\n%s\n", args[0], taskUsage)
	return errUsage
}

// taskRunFlags are task run's own flags.
type taskRunFlags struct {
	agent   string
	timeout time.Duration
	noSync  bool
}

// runTaskRun starts a task, streams its transcript, and exits with its
// status: 0 succeeded, the program's exit code when it failed, 124 timed
// out, 130 cancelled (a first interrupt cancels it), 1 lost.
func runTaskRun(ctx context.Context, e *env, args []string) error {
	var f taskRunFlags
	c, fs, err := newCLI(e, "task run", args, func(fs *flag.FlagSet) {
		fs.StringVar(&f.agent, "agent", "", "claude, codex or command (the default with -- PROGRAM ARGS..., claude otherwise)")
		fs.DurationVar(&f.timeout, "timeout", tasks.DefaultTimeout, "end the task after this long (at most 24h)")
		fs.BoolVar(&f.noSync, "no-sync", false, "start on /workspace as it is, without syncing the project first")
	})
	if err != nil {
		return err
	}
	defer c.close()
	req, err := f.request(c.project, fs.Args(), dashDash(args, fs.Args()))
	if err != nil {
		fmt.Fprintf(e.stderr, "pilot-sandbox task run: %v\n%s\n", err, taskUsage)
		return errUsage
	}
	heard := c.listenTasks()
	defer heard.stop()
	prog := c.progressLine()
	rec, err := c.tasks.Start(ctx, req, prog.report)
	prog.end()
	if err != nil {
		return err
	}
	fin := c.follow(ctx, heard, rec.ID)
	return exitOf(fin)
}

// request is the task the command line asks for: with --, argv (agent
// command unless named); otherwise a prompt (agent claude unless named).
func (f taskRunFlags) request(project string, words []string, afterDashes bool) (tasks.StartRequest, error) {
	req := tasks.StartRequest{ProjectPath: project, Agent: f.agent, Timeout: f.timeout, NoSync: f.noSync}
	switch {
	case len(words) == 0:
		return req, errors.New("nothing to run")
	case afterDashes:
		req.Command = words
		if req.Agent == "" {
			req.Agent = tasks.AgentCommand
		}
	default:
		req.Prompt = strings.Join(words, " ")
		if req.Agent == "" {
			req.Agent = tasks.AgentClaude
		}
	}
	return req, req.Check()
}

// dashDash says the words are what followed a -- of the command line
// (the first: a prompt may hold one).
func dashDash(args, words []string) bool {
	i := slices.Index(args, "--")
	return i >= 0 && slices.Equal(args[i+1:], words)
}

// exitOf is the exit status a task's end makes.
func exitOf(fin tasks.Finished) error {
	switch fin.Status {
	case tasks.StatusSucceeded:
		return nil
	case tasks.StatusFailed:
		return exitError{code: min(max(fin.ExitCode, 1), 255)}
	case tasks.StatusTimedOut:
		return exitError{code: 124}
	case tasks.StatusCancelled:
		return exitError{code: 130}
	}
	return exitError{code: 1}
}

func runTaskList(_ context.Context, e *env, args []string) error {
	c, _, err := newCLI(e, "task list", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	list, err := c.tasks.List(c.project)
	if err != nil {
		return err
	}
	if c.json {
		c.printJSON(list)
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintf(e.stdout, "No tasks for %s.\n", c.project)
		return nil
	}
	for _, r := range list {
		fmt.Fprintf(e.stdout, "%s  %-9s  %s  %s\n", r.ID, r.Status, time.UnixMilli(r.StartedAt).Format("2006-01-02 15:04"), clip(taskWhat(r)))
	}
	return nil
}

// taskWhat is what a task runs, in a few words.
func taskWhat(r tasks.Record) string {
	if r.Agent == tasks.AgentCommand {
		return strings.Join(r.Argv, " ")
	}
	return r.Agent + ": " + r.Prompt
}

func runTaskDiff(ctx context.Context, e *env, args []string) error {
	c, fs, err := newCLI(e, "task diff", flagsFirst(args), nil)
	if err != nil {
		return err
	}
	defer c.close()
	if fs.NArg() != 1 {
		fmt.Fprintln(e.stderr, taskUsage)
		return errUsage
	}
	d, err := c.tasks.Diff(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if c.json {
		c.printJSON(d)
		return nil
	}
	for _, f := range d.Files {
		counts := fmt.Sprintf("+%d -%d", f.Additions, f.Deletions)
		if f.Binary {
			counts = "binary"
		}
		fmt.Fprintf(e.stdout, "%-10s %-12s %s\n", f.Status, counts, f.Path)
	}
	if len(d.Files) == 0 {
		fmt.Fprintln(e.stdout, "The task changed nothing.")
		return nil
	}
	fmt.Fprintf(e.stdout, "\n%s", d.Patch)
	if d.PatchTruncated {
		fmt.Fprintf(e.stderr, "pilot-sandbox task diff: the patch is cut at %d MiB\n", workspace.MaxPatch>>20)
	}
	return nil
}

func runTaskApply(ctx context.Context, e *env, args []string) error {
	c, fs, err := newCLI(e, "task apply", flagsFirst(args), nil)
	if err != nil {
		return err
	}
	defer c.close()
	if fs.NArg() < 1 {
		fmt.Fprintln(e.stderr, taskUsage)
		return errUsage
	}
	var paths []string
	if fs.NArg() > 1 {
		paths = fs.Args()[1:]
	}
	applied, err := c.tasks.Apply(ctx, fs.Arg(0), paths)
	var conflict *workspace.ConflictError
	if errors.As(err, &conflict) {
		fmt.Fprintf(e.stderr, "Nothing was written: these files changed in %s since the task's base:\n", c.project)
		for _, p := range conflict.Paths {
			fmt.Fprintf(e.stderr, "  %s\n", p)
		}
		return exitError{code: 1}
	}
	if err != nil {
		return err
	}
	if c.json {
		c.printJSON(applied)
		return nil
	}
	fmt.Fprintf(e.stdout, "Applied %d files to %s:\n  %s\n", len(applied), c.project, strings.Join(applied, "\n  "))
	return nil
}
