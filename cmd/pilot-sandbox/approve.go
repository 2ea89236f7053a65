package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
			showApproval(e.stdout, c.project, a)
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

// approveOne shows one request, asks about it (unless yes) and records
// it.
func (c *cli) approveOne(ctx context.Context, a service.Approval, yes bool) error {
	showApproval(c.env.stdout, c.project, a)
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

// showApproval writes what a request asks, all of it, before the question
// (docs/protocol.md, "Approvals show what they approve"): the summary,
// the content, the files a Dockerfile takes, what changed since the kind
// was approved last, the warnings, the digest.
func showApproval(w io.Writer, project string, a service.Approval) {
	fmt.Fprintf(w, "The project %s asks to %s.\n", project, a.Summary)
	section := func(title, text string) {
		if strings.TrimSpace(text) == "" {
			return
		}
		fmt.Fprintf(w, "  %s\n", title)
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	section("What it asks:", a.Content)
	for _, f := range a.Files {
		if f.Omitted != "" {
			fmt.Fprintf(w, "  File %s (%d bytes): not shown, %s\n", f.Path, f.Size, f.Omitted)
			continue
		}
		section(fmt.Sprintf("File %s (%d bytes):", f.Path, f.Size), f.Text)
	}
	section("Changed since you last approved it:", a.Diff)
	section("Warnings (what reaches beyond the project):", strings.Join(a.Warnings, "\n"))
	fmt.Fprintf(w, "  digest %s\n", a.Digest)
}
