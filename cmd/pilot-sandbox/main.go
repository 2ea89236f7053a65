// Command pilot-sandbox is the sidecar that gives each project a Docker
// container with a virtual desktop, and its user commands.
//
//	pilot-sandbox serve [--framing lsp|ndjson]   JSON-RPC on stdio (docs/protocol.md)
//	pilot-sandbox ui [--project DIR] [--listen ADDR] [--no-open]   the panel in a browser
//	pilot-sandbox mcp [--project DIR] [--enable-tools]   MCP on stdio for coding agents
//	pilot-sandbox start|pause|stop|status [--project DIR]
//	pilot-sandbox approve [--project DIR] [--yes]
//	pilot-sandbox remove [--project DIR | --container ID]
//	pilot-sandbox exec [--project DIR] [--timeout D] [-i] [--workdir DIR] [--env NAME=VALUE] -- PROGRAM [ARG...]
//	pilot-sandbox screenshot [--project DIR] [-o FILE]
//	pilot-sandbox tool [NAME [--project DIR] [JSON arguments]]
//	pilot-sandbox net [--project DIR] [allow HOST | deny HOST | preset NAME | forget RULE]
//	pilot-sandbox sync [--project DIR]
//	pilot-sandbox task run [--project DIR] [--agent A] [--timeout D] PROMPT | -- ARGV...
//	pilot-sandbox task list | diff ID | apply ID [PATH...]
//	pilot-sandbox list [--all] | prune [--yes] | doctor | build | version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "serve the JSON-RPC protocol on stdin/stdout (for the desktop app)", runServe},
		{"ui", "serve the sandbox panel in a browser, on 127.0.0.1", runUI},
		{"mcp", "serve the project's agent tools over MCP on stdin/stdout (for coding agents)", runMCP},
		{"start", "start the project's sandbox and print how to watch it", runStart},
		{"approve", "approve what the project's own files ask (a Dockerfile, limits above your caps)", runApprove},
		{"pause", "freeze the project's sandbox, every window kept; start resumes it", runPause},
		{"stop", "stop the project's sandbox (its files are kept)", runStop},
		{"status", "show the project's sandbox", runStatus},
		{"remove", "delete the project's sandbox and everything in it", runRemove},
		{"list", "list your sandboxes (--all: other users' too)", runList},
		{"prune", "remove the sandboxes whose project directory is gone", runPrune},
		{"exec", "run a program in the project's sandbox, its arguments as given (like docker exec)", runExec},
		{"expose", "make a port of the sandbox answer on this machine's 127.0.0.1 while it runs", runExpose},
		{"forward", "make the sandbox's localhost:PORT reach this machine's 127.0.0.1:HOSTPORT while it runs", runForward},
		{"browser", "print the sandbox browser's DevTools address (Playwright, Puppeteer) while it runs", runBrowser},
		{"cp", "copy files into or out of the project's sandbox (sandbox:PATH), running or stopped", runCp},
		{"screenshot", "save a PNG of the project's sandbox display", runScreenshot},
		{"tool", "run one of the agent tools, or list them", runTool},
		{"net", "show the network policy and the connections; allow, deny, preset, forget", runNet},
		{"sync", "copy the project's files into the sandbox's /workspace (what changed)", runSync},
		{"task", "run a coding agent or a command in the sandbox on /workspace; list, diff, apply", runTask},
		{"build", "build the sandbox image now (start builds it when needed)", runBuild},
		{"doctor", "check Docker and the sandbox image, and say what to fix", runDoctor},
		{"version", "print the version", runVersion},
	}
}

// env is what every command shares: where output goes.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// exitError carries a process exit code out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// errUsage marks a command line that makes no sense; the message was printed.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		var exit exitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &exit):
			return exit.code
		case errors.Is(err, errUsage):
			return 2
		default:
			fmt.Fprintln(e.stderr, "pilot-sandbox "+c.name+": "+describeError(err))
			return 1
		}
	}
	fmt.Fprintf(e.stderr, "pilot-sandbox: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "pilot-sandbox: a Docker sandbox with a virtual desktop for each project")
	fmt.Fprintln(w, "\nUsage: pilot-sandbox COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'pilot-sandbox COMMAND -h' for a command's flags.")
}

func runVersion(_ context.Context, e *env, _ []string) error {
	fmt.Fprintln(e.stdout, "pilot-sandbox", version)
	return nil
}
