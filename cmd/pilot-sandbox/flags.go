package main

import (
	"flag"
	"fmt"
)

// takesArguments names the commands that read arguments after their
// flags; every other refuses any (parseFlags).
var takesArguments = map[string]bool{"exec": true, "cp": true, "tool": true, "net": true, "task run": true, "task diff": true, "task apply": true, "expose": true, "forward": true}

// parseFlags parses a command's flags and refuses any argument after
// them: a project directory given without -project would be ignored (and
// a flag after it too, as flags end at the first argument), and the
// command would act on the current directory's sandbox.
func parseFlags(e *env, fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		hint := ""
		if fs.Lookup("project") != nil {
			hint = ": name the project with -project DIR"
		}
		fmt.Fprintf(e.stderr, "pilot-sandbox %s: unexpected argument %q%s\n", fs.Name(), fs.Arg(0), hint)
		return errUsage
	}
	return nil
}

// parseFlagsAndArguments parses a command's flags, leaving its arguments.
func parseFlagsAndArguments(_ *env, fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	return nil
}
