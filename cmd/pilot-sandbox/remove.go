package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
)

// errNoContainer: remove --container named no sandbox. It exits non-zero,
// as docker rm of a missing container does: a script learns that its ID
// was wrong.
var errNoContainer = errors.New("there is no sandbox container")

// runRemove deletes the project's sandbox, or one by its container, after
// saying what goes with it and, on a terminal, asking.
func runRemove(ctx context.Context, e *env, args []string) error {
	var container string
	var yes bool
	c, _, err := newCLI(e, "remove", args, func(fs *flag.FlagSet) {
		fs.StringVar(&container, "container", "", "remove the sandbox with this container ID (or name) instead of the project's")
		fs.BoolVar(&yes, "yes", false, "remove it without asking, even on a terminal")
	})
	if err != nil {
		return err
	}
	defer c.close()
	if !c.json && !c.confirmRemove(ctx, container, yes) {
		fmt.Fprintln(e.stdout, "Nothing removed.")
		return nil
	}
	var removed bool
	what := c.project
	if container != "" {
		what = "container " + container
		removed, err = c.manager.RemoveContainer(ctx, container)
	} else {
		removed, err = c.manager.Remove(ctx, c.project)
	}
	switch {
	case err != nil:
		return err
	case container != "" && !removed:
		return fmt.Errorf("%w %q: pilot-sandbox list names yours", errNoContainer, container)
	case c.json:
		c.printJSON(map[string]bool{"removed": removed})
	case removed:
		fmt.Fprintf(e.stdout, "Removed the sandbox of %s.\n", what)
	default:
		fmt.Fprintf(e.stdout, "%s had no sandbox.\n", c.project)
	}
	return nil
}

// confirmRemove says what a remove deletes and, on a terminal and
// without --yes, asks. Elsewhere (a script, a pipe) it goes on, as docker
// rm does.
func (c *cli) confirmRemove(ctx context.Context, container string, yes bool) bool {
	what := "the sandbox container " + container
	if container == "" {
		st, err := c.manager.Status(ctx, c.project)
		if err == nil && st == nil {
			return true // nothing to delete: nothing to ask
		}
		what = "the sandbox of " + c.project
		if err == nil {
			what += fmt.Sprintf(" (%s, %s)", st.ContainerName, st.Status)
		}
	}
	fmt.Fprintf(c.env.stdout, "This deletes %s: every file and program in it, and the project's own image if it has one. "+
		"The project's directory is not touched.\n", what)
	if yes || !isTerminalReader(c.env.stdin) {
		return true
	}
	return confirm(c.env.stdin, c.env.stdout, "Remove it? [y/N] ")
}
