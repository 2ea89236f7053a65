package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// runApprove shows what the project's repository content asks that needs
// the user's approval (a Dockerfile to build, limits above the caps, a
// network policy wider than the user's) and
// records each approval after a yes on a terminal, or with --yes.
func runApprove(ctx context.Context, e *env, args []string) error {
	var yes bool
	c, _, err := newCLI(e, "approve", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&yes, "yes", false, "approve without asking")
	})
	if err != nil {
		return err
	}
	defer c.close()
	pending, err := c.manager.Pending(ctx, c.project)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		fmt.Fprintf(e.stdout, "%s asks for nothing that needs your approval.\n", c.project)
		return nil
	}
	if !yes && !isTerminalReader(e.stdin) {
		for _, a := range pending {
			fmt.Fprintf(e.stdout, "%s asks to %s (digest %s).\n", c.project, a.Summary, a.Digest)
		}
		return errors.New("not asking without a terminal: run pilot-sandbox approve --yes to approve it")
	}
	for _, a := range pending {
		if err := c.approveOne(ctx, a, yes); err != nil {
			return err
		}
	}
	return nil
}

// approveOne asks about one request (unless yes) and records it.
func (c *cli) approveOne(ctx context.Context, a service.Approval, yes bool) error {
	fmt.Fprintf(c.env.stdout, "The project %s asks to %s.\n", c.project, a.Summary)
	for _, line := range strings.Split(strings.TrimSpace(a.Content), "\n") {
		if line != "" {
			fmt.Fprintf(c.env.stdout, "    %s\n", line)
		}
	}
	fmt.Fprintf(c.env.stdout, "  digest %s\n", a.Digest)
	if !yes && !confirm(c.env.stdin, c.env.stdout, "Approve this? [y/N] ") {
		return errors.New("not approved: the sandbox does not start until it is")
	}
	if err := c.manager.Approve(ctx, c.project, a.Digest); err != nil {
		return err
	}
	fmt.Fprintf(c.env.stdout, "Approved (kept in your own state, not in the project).\n")
	return nil
}

// startApproving starts the sandbox, asking on a terminal for each approval
// the project needs first; elsewhere it says to run pilot-sandbox approve.
func (c *cli) startApproving(ctx context.Context) (service.State, error) {
	for {
		st, err := c.manager.Start(ctx, c.project)
		var ae *service.ApprovalError
		if !errors.As(err, &ae) {
			return st, err
		}
		if !isTerminalReader(c.env.stdin) {
			return st, fmt.Errorf("%w; to approve it, run: pilot-sandbox approve --project %s", err, shellQuote(c.project))
		}
		if err := c.approveOne(ctx, ae.Approval, false); err != nil {
			return st, err
		}
	}
}
