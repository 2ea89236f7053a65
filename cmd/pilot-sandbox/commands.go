package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
)

// cli is what a user command gets: a manager and its flags parsed.
type cli struct {
	env     *env
	app     *app
	manager *service.Manager
	net     *network
	tasks   *tasks.Manager
	project string
	json    bool
	close   func()
}

// newCLI parses the common flags (--project, --json) plus the command's own
// (added by extra), then opens the log and the manager.
func newCLI(e *env, name string, args []string, extra func(*flag.FlagSet)) (*cli, *flag.FlagSet, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	project := fs.String("project", ".", "the project directory")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	verbose := fs.Bool("v", false, "log progress and details to stderr")
	if extra != nil {
		extra(fs)
	}
	parse := parseFlags
	if takesArguments[name] {
		parse = parseFlagsAndArguments
	}
	if err := parse(e, fs, args); err != nil {
		return nil, nil, err
	}
	level := zerolog.WarnLevel
	if *verbose {
		level = zerolog.DebugLevel
	}
	abs, err := absProject(*project)
	if err != nil {
		return nil, nil, err
	}
	a, err := openApp(e.stderr, level)
	if err != nil {
		return nil, nil, err
	}
	return &cli{env: e, app: a, manager: a.m, net: a.net, tasks: a.tasks, project: abs, json: *asJSON, close: a.close}, fs, nil
}

func absProject(p string) (string, error) {
	if strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = home + p[1:]
	}
	abs, err := filepathAbs(p)
	if err != nil {
		return "", fmt.Errorf("project %q: %w", p, err)
	}
	return abs, nil
}

// printState prints a sandbox the way a person reads it, or as JSON.
func (c *cli) printState(st *service.State) {
	st = withoutCarried(st)
	if c.json {
		c.printJSON(st)
		return
	}
	w := c.env.stdout
	if st == nil {
		fmt.Fprintf(w, "No sandbox for %s. Start one with: pilot-sandbox start --project %s\n", c.project, shellQuote(c.project))
		return
	}
	fmt.Fprintf(w, "Sandbox for %s: %s\n", st.ProjectPath, st.Status)
	fmt.Fprintf(w, "  container  %s (%s)\n", st.ContainerName, short(st.ContainerID))
	fmt.Fprintf(w, "  image      %s\n", imageLine(st))
	fmt.Fprintf(w, "  display    %dx%d\n", st.Display.Width, st.Display.Height)
	switch {
	case st.Status == service.StatusRunning && st.Network == service.NetworkNone:
		fmt.Fprintf(w, "  network    none: %s\n", noNetworkDesktop)
	case st.Status == service.StatusRunning && st.Carried:
		fmt.Fprintf(w, "  desktop    on a remote engine: %s\n", noNetworkDesktop)
	case st.Status == service.StatusRunning:
		fmt.Fprintf(w, "  control    %s\n", st.ViewerURL)
		fmt.Fprintf(w, "  watch      %s\n", st.WatchURL)
		fmt.Fprintf(w, "  vnc        127.0.0.1:%d\n", st.VNCPort)
	case st.Status == service.StatusPaused:
		fmt.Fprintf(w, "  paused     every process frozen, every window kept%s; pilot-sandbox start resumes it\n", heldMemory(st.MemoryBytes))
	}
	if st.StopReason != "" {
		fmt.Fprintf(w, "  reason     %s\n", st.StopReason)
	}
	if st.Error != "" {
		fmt.Fprintf(w, "  error      %s\n", st.Error)
	}
}

// noNetworkDesktop says where the desktop of a sandbox whose ports are
// carried (without a network, or on a remote engine) is.
const noNetworkDesktop = "its desktop is carried by `pilot-sandbox ui` (or the app) while that runs; " +
	"no address printed here would outlive this command"

// withoutCarried is st without the desktop addresses of a sandbox whose
// ports this process carried (ports.DesktopRelay): they end with it.
func withoutCarried(st *service.State) *service.State {
	if st == nil || !st.Carried {
		return st
	}
	out := *st
	out.WSPort, out.VNCPort, out.ViewerURL, out.WatchURL = 0, 0, "", ""
	return &out
}

// imageLine says which image a sandbox runs, in words, and its tag.
func imageLine(st *service.State) string {
	kind := map[string]string{
		images.VariantDesktop: "desktop",
		images.VariantBrowser: "browser (the desktop with Chromium)",
		images.VariantDev:     "dev (the browser image with git, Node.js, Python and a C toolchain)",
		images.VariantProject: "the project's own Dockerfile",
	}[st.ImageVariant]
	if kind == "" {
		return st.Image
	}
	return fmt.Sprintf("%s, %s", kind, st.Image)
}

func (c *cli) printJSON(v any) {
	enc := json.NewEncoder(c.env.stdout)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// showProgress prints the manager's progress for the command's project to
// stderr until the returned function is called.
func (c *cli) showProgress() func() {
	events, stop := c.manager.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			if ev.Kind == service.EventProgress {
				fmt.Fprintf(c.env.stderr, "%s: %s\n", ev.Progress.Stage, ev.Progress.Message)
			}
		}
	}()
	return func() { stop(); <-done }
}

func runStart(ctx context.Context, e *env, args []string) error {
	c, _, err := newCLI(e, "start", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	stopProgress := c.showProgress()
	started := time.Now()
	st, err := c.startApproving(ctx)
	stopProgress()
	if err != nil {
		return err
	}
	c.printState(&st)
	if !c.json {
		fmt.Fprintf(e.stdout, "\nReady in %.1fs. Open the control address in a browser to see the desktop;\nthe watch address shows it without taking input.\n", time.Since(started).Seconds())
	}
	return nil
}

func runStop(ctx context.Context, e *env, args []string) error {
	c, _, err := newCLI(e, "stop", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	st, err := c.manager.Stop(ctx, c.project)
	if err != nil {
		return err
	}
	c.printState(&st)
	return nil
}

func runStatus(ctx context.Context, e *env, args []string) error {
	c, _, err := newCLI(e, "status", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	st, err := c.manager.Status(ctx, c.project)
	if err != nil {
		return err
	}
	c.printState(st)
	return nil
}

func runList(ctx context.Context, e *env, args []string) error {
	var all bool
	c, _, err := newCLI(e, "list", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&all, "all", false, "also list the sandboxes of other users of the engine")
	})
	if err != nil {
		return err
	}
	defer c.close()
	states, err := c.manager.List(ctx)
	if err != nil {
		return err
	}
	var others []service.Foreign
	if all {
		if others, err = c.manager.OthersOnEngine(ctx); err != nil {
			return err
		}
	}
	switch {
	case c.json && all:
		c.printJSON(map[string]any{"sandboxes": listed(states), "others": others})
		return nil
	case c.json:
		c.printJSON(listed(states))
		return nil
	}
	printList(e.stdout, states)
	if all {
		printOthers(e.stdout, others)
	}
	return nil
}

// printList prints the user's own sandboxes, one a line.
func printList(w io.Writer, states []service.State) {
	if len(states) == 0 {
		fmt.Fprintln(w, "No sandboxes.")
	}
	gone := 0
	for _, st := range states {
		line := fmt.Sprintf("%-9s %-10s %s", st.Status, st.ImageVariant, st.ProjectPath)
		switch {
		case st.Status == service.StatusRunning && st.Network == service.NetworkNone:
			line += "  (no network: its desktop is carried by pilot-sandbox ui)"
		case st.Status == service.StatusRunning && st.Carried:
			line += "  (remote engine: its desktop is carried by pilot-sandbox ui)"
		case st.Status == service.StatusRunning:
			line += fmt.Sprintf("  (noVNC 127.0.0.1:%d)", st.WSPort)
		}
		if projectfs.Gone(st.ProjectPath) {
			line += "  (project directory gone)"
			gone++
		}
		fmt.Fprintln(w, line)
	}
	if gone > 0 {
		fmt.Fprintf(w, "\n%d sandbox(es) belong to a project directory that is gone: pilot-sandbox prune removes them.\n", gone)
	}
}

// printOthers prints the sandboxes of the engine's other users: whose,
// and where, never to be pruned from here.
func printOthers(w io.Writer, others []service.Foreign) {
	if len(others) == 0 {
		fmt.Fprintln(w, "\nNo other user's sandboxes on this engine.")
		return
	}
	fmt.Fprintf(w, "\nOther users' sandboxes on this engine (theirs to stop and remove; prune never does):\n")
	for _, o := range others {
		fmt.Fprintf(w, "%-9s %s  %s  (%s)\n", o.Status, o.Owner, o.ProjectPath, o.ContainerName)
	}
}

func runScreenshot(ctx context.Context, e *env, args []string) error {
	var output string
	c, _, err := newCLI(e, "screenshot", args, func(fs *flag.FlagSet) {
		fs.StringVar(&output, "o", "screenshot.png", "the PNG file to write (- for stdout)")
	})
	if err != nil {
		return err
	}
	defer c.close()
	shot, err := c.manager.Screenshot(ctx, c.project)
	if err != nil {
		return err
	}
	if output == "-" {
		_, err = e.stdout.Write(shot.PNG)
		return err
	}
	if err := os.WriteFile(output, shot.PNG, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "Wrote %s (%dx%d).\n", output, shot.Width, shot.Height)
	return nil
}

func runBuild(ctx context.Context, e *env, args []string) error {
	c, _, err := newCLI(e, "build", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	stopProgress := c.showProgress()
	started := time.Now()
	err = c.manager.EnsureImage(ctx, "")
	stopProgress()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "The sandbox image %s is up to date (build hash %s; %.1fs).\n", c.manager.Image(), c.manager.ImageHash(), time.Since(started).Seconds())
	return nil
}

// describeError says what went wrong in words, with the hint a person needs.
func describeError(err error) string {
	var logged *service.LogError
	switch {
	case errors.As(err, &logged):
		return err.Error() + "\n" + indent(logged.Log)
	case errors.Is(err, service.ErrNoSandbox):
		return "this project has no sandbox: run pilot-sandbox start"
	}
	return err.Error()
}

func indent(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, " \t'\"$`\\!*?[]{}()<>|&;#~") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}
