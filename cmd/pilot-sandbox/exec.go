package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// runExec runs a program in the project's sandbox as docker exec runs
// one: its arguments as given (no shell: `sh -c '...'` for a shell
// line), its output as it comes, this process's stdin with -i, and its
// exit code as this process's.
func runExec(ctx context.Context, e *env, args []string) error {
	var (
		timeout     time.Duration
		interactive bool
		tty         bool
		workdir     string
		vars        envFlag
	)
	c, fs, err := newCLI(e, "exec", splitShortFlags(args), func(fs *flag.FlagSet) {
		fs.DurationVar(&timeout, "timeout", service.DefaultExecTimeout, "stop the command after this long (at most 10m)")
		fs.BoolVar(&interactive, "i", false, "pass this process's standard input to the command")
		fs.BoolVar(&tty, "t", false, "run the command on a terminal, as docker exec -t (stdin must be one)")
		fs.StringVar(&workdir, "workdir", "", "the directory in the sandbox to run it in (default: the sandbox user's home)")
		fs.Var(&vars, "env", "set a variable for the command, `NAME=VALUE` (repeatable)")
	})
	if err != nil {
		return err
	}
	defer c.close()
	if fs.NArg() == 0 {
		fmt.Fprintln(e.stderr, "usage: pilot-sandbox exec [--project DIR] [--timeout D] [-i] [-t] [--workdir DIR] [--env NAME=VALUE]... -- PROGRAM [ARG...]")
		return errUsage
	}
	if tty && c.json {
		return fmt.Errorf("exec -t writes to the terminal: it takes no --json")
	}
	req := service.ExecRequest{Argv: fs.Args(), Timeout: timeout, WorkDir: workdir, Env: vars.vars}
	if interactive {
		req.Input = e.stdin
	}
	if !c.json {
		req.Stdout, req.Stderr = e.stdout, e.stderr
	}
	restoreTerminal, err := c.execTerminal(ctx, tty, &req)
	if err != nil {
		return err
	}
	defer restoreTerminal() // a panic too
	out, err := c.manager.Exec(ctx, c.project, req)
	restoreTerminal() // before what this process writes itself
	if err != nil {
		return err
	}
	if c.json {
		c.printJSON(out)
		return nil
	}
	if out.TimedOut {
		fmt.Fprintf(e.stderr, "pilot-sandbox exec: timed out after %s\n", timeout)
	}
	if out.ExitCode != 0 {
		return exitError{code: min(max(out.ExitCode, 1), 255)}
	}
	return nil
}

// execTerminal gives the command this process's terminal for exec -t,
// in raw mode until restore; without -t, a network question of the
// sandbox is asked on the terminal until restore (docs/cli.md).
func (c *cli) execTerminal(ctx context.Context, tty bool, req *service.ExecRequest) (restore func(), err error) {
	if !tty {
		return c.askOnTerminal(ctx), nil
	}
	sizes, restore, err := hostTerminal(ctx, c.env.stdin)
	if err != nil {
		return nil, err
	}
	req.Terminal = sizes
	return restore, nil
}

// splitShortFlags makes docker's -it (and -ti) the two flags the flag
// package knows, up to the "--" before the program.
func splitShortFlags(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for i, a := range args {
		switch a {
		case "--":
			return append(out, args[i:]...)
		case "-it", "-ti":
			out = append(out, "-i", "-t")
		default:
			out = append(out, a)
		}
	}
	return out
}

// envFlag collects --env NAME=VALUE flags.
type envFlag struct{ vars map[string]string }

func (f *envFlag) String() string { return "" }

func (f *envFlag) Set(kv string) error {
	name, value, ok := strings.Cut(kv, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not NAME=VALUE", kv)
	}
	if f.vars == nil {
		f.vars = map[string]string{}
	}
	f.vars[name] = value
	return nil
}
