package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// listedState is a sandbox as `list --json` prints it: its state, and
// whether its project directory is gone.
type listedState struct {
	service.State
	ProjectGone bool `json:"projectGone,omitempty"`
}

func listed(states []service.State) []listedState {
	out := make([]listedState, 0, len(states))
	for _, st := range states {
		out = append(out, listedState{State: *withoutCarried(&st), ProjectGone: projectfs.Gone(st.ProjectPath)})
	}
	return out
}

// runPrune removes the sandboxes whose project directory is gone, after
// asking on a terminal; elsewhere --yes says yes.
func runPrune(ctx context.Context, e *env, args []string) error {
	var yes bool
	c, _, err := newCLI(e, "prune", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&yes, "yes", false, "remove them without asking")
	})
	if err != nil {
		return err
	}
	defer c.close()
	orphans, err := c.manager.Orphans(ctx)
	if err != nil {
		return err
	}
	if len(orphans) == 0 {
		fmt.Fprintln(e.stdout, "No sandbox belongs to a project directory that is gone.")
		return nil
	}
	fmt.Fprintf(e.stdout, "These sandboxes belong to a project directory that is gone:\n")
	for _, st := range orphans {
		fmt.Fprintf(e.stdout, "  %-9s %s  (%s)\n", st.Status, st.ProjectPath, st.ContainerName)
	}
	if !yes {
		if !isTerminalReader(e.stdin) {
			return errors.New("not asking without a terminal: run pilot-sandbox prune --yes to remove them")
		}
		if !confirm(e.stdin, e.stdout, fmt.Sprintf("Remove these %d sandboxes and everything in them? [y/N] ", len(orphans))) {
			fmt.Fprintln(e.stdout, "Nothing removed.")
			return nil
		}
	}
	return pruneAll(ctx, c, orphans)
}

// pruneAll removes each sandbox by its container, saying what it did.
func pruneAll(ctx context.Context, c *cli, orphans []service.State) error {
	var failed []error
	for _, st := range orphans {
		if _, err := c.manager.RemoveContainer(ctx, st.ContainerID); err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", st.ProjectPath, err))
			continue
		}
		fmt.Fprintf(c.env.stdout, "Removed the sandbox of %s.\n", st.ProjectPath)
	}
	return errors.Join(failed...)
}

// confirm asks a yes/no question; only y or yes is yes.
func confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprint(out, question)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}

// isTerminalReader says whether r is a terminal a person types at (not
// /dev/null, which is a character device too).
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
