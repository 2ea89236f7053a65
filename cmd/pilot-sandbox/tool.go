package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// runTool runs one agent tool the way the agent would, for a person trying
// it from a shell: pilot-sandbox tool NAME [--project DIR] ['{"x": 1}'].
// It does not need the project's agent tools switched on: that switch is
// about what the agent is offered. Without NAME it lists the tools.
func runTool(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return listTools(e, args)
	}
	name := args[0]
	var output string
	c, fs, err := newCLI(e, "tool", args[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&output, "o", "screenshot.png", "where to write an image the tool returns")
	})
	if err != nil {
		return err
	}
	defer c.close()
	arguments := json.RawMessage("{}")
	switch fs.NArg() {
	case 0:
	case 1:
		arguments = json.RawMessage(fs.Arg(0))
		if !json.Valid(arguments) {
			fmt.Fprintf(e.stderr, "pilot-sandbox tool: the arguments must be one JSON object, e.g. '{\"x\": 100, \"y\": 200}'\n")
			return errUsage
		}
	default:
		fmt.Fprintf(e.stderr, "pilot-sandbox tool: give the arguments as one JSON object in quotes, e.g. '{\"x\": 100, \"y\": 200}'\n")
		return errUsage
	}
	// A person at a shell waits for the end: no answer bound, which would
	// leave a long start to die with this process. The call goes on the
	// sandbox's timeline, and yields to the user who took the desktop
	// over, as every other tool set's (an agent outside may well run this
	// command from its own shell).
	stateDir := c.manager.StateDir()
	set := tools.New(c.manager, tools.Bound(0), tools.Record(activity.NewRecorder(stateDir)), tools.Control(activity.NewControl(stateDir)))
	defer set.Close()
	ctx = activity.WithOrigin(ctx, activity.Origin{Source: activity.SourceRPC, Client: "pilot-sandbox tool"})
	res, err := set.Call(ctx, c.project, name, arguments)
	if err != nil {
		return err
	}
	if c.json {
		c.printJSON(res)
	} else if err := printResult(e, res, output); err != nil {
		return err
	}
	if res.IsError {
		return exitError{code: 1}
	}
	return nil
}

func printResult(e *env, res tools.Result, output string) error {
	out := e.stdout
	if res.IsError {
		out = e.stderr
	}
	for _, part := range res.Content {
		switch part.Type {
		case "image":
			data := part.Data
			if err := os.WriteFile(output, data, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(out, "Wrote %s (%s, %d bytes).\n", output, part.MimeType, len(data))
		default:
			fmt.Fprintln(out, part.Text)
		}
	}
	return nil
}

func listTools(e *env, args []string) error {
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	asJSON := fs.Bool("json", false, "print the tools with their JSON Schemas")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	list := tools.New(nil).List()
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	fmt.Fprintln(e.stdout, "Usage: pilot-sandbox tool NAME [--project DIR] ['{JSON arguments}']")
	fmt.Fprintln(e.stdout)
	for _, t := range list {
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n    %s\n    arguments: %s\n\n", t.Name, t.Description, schema)
	}
	return nil
}
