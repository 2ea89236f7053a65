package tasks

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Agents a task can run.
const (
	AgentClaude  = "claude"
	AgentCodex   = "codex"
	AgentCommand = "command"
)

// Limits of a task's request.
const (
	DefaultTimeout = 30 * time.Minute
	MaxTimeout     = 24 * time.Hour
	// MaxPrompt bounds a prompt: it goes to the agent as one argument,
	// and Linux takes none longer than 128 KiB.
	MaxPrompt = 100_000
	// maxArgv bounds a command's arguments, all together.
	maxArgv = 100_000
)

// StartRequest is a task to start.
type StartRequest struct {
	ProjectPath string
	Agent       string   // AgentClaude, AgentCodex or AgentCommand
	Prompt      string   // for an agent
	Command     []string // for AgentCommand: argv, no shell
	Env         map[string]string
	Timeout     time.Duration // 0 means DefaultTimeout
	// NoSync starts on the workspace as it is, without syncing the
	// project into it first.
	NoSync bool
}

// ArgumentError names a request's field at fault.
type ArgumentError struct {
	Name, Reason string
}

func (e *ArgumentError) Error() string { return e.Name + " " + e.Reason }

// Check says what is wrong with the request, if anything, before a
// sandbox is asked for.
func (r StartRequest) Check() error {
	if _, err := r.argv(); err != nil {
		return err
	}
	if _, err := r.timeout(); err != nil {
		return err
	}
	_, err := r.env("")
	return err
}

// argv is what the task runs, as the issue and docs/protocol.md say for
// each agent.
func (r StartRequest) argv() ([]string, error) {
	switch r.Agent {
	case AgentClaude, AgentCodex:
		switch {
		case strings.TrimSpace(r.Prompt) == "":
			return nil, &ArgumentError{"prompt", "must not be empty for agent " + r.Agent}
		case len(r.Prompt) > MaxPrompt || strings.ContainsRune(r.Prompt, 0):
			return nil, &ArgumentError{"prompt", fmt.Sprintf("must be at most %d bytes, without NUL", MaxPrompt)}
		case len(r.Command) > 0:
			return nil, &ArgumentError{"command", "is for agent command only"}
		}
		if r.Agent == AgentClaude {
			// The sandbox is the isolation: Claude Code's own permission
			// prompts cannot be answered in -p and refuse Write and Bash in
			// a workspace nobody trusted interactively (docs/tasks.md,
			// Permissions).
			return []string{"claude", "-p", r.Prompt, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}, nil
		}
		// The same for Codex, whose own sandbox (bubblewrap) cannot start
		// in the container ("bwrap: Failed to make / slave: Operation not
		// permitted", 0.171.0): every command it ran failed, and its
		// default read-only profile would refuse the edits anyway.
		return []string{"codex", "exec", "--dangerously-bypass-approvals-and-sandbox", "--json", r.Prompt}, nil
	case AgentCommand:
		return r.commandArgv()
	}
	return nil, &ArgumentError{"agent", fmt.Sprintf("must be %q, %q or %q; got %q", AgentClaude, AgentCodex, AgentCommand, r.Agent)}
}

func (r StartRequest) commandArgv() ([]string, error) {
	total := 0
	for _, a := range r.Command {
		total += len(a) + 1
		if strings.ContainsRune(a, 0) {
			return nil, &ArgumentError{"command", "must not hold a NUL character"}
		}
	}
	switch {
	case len(r.Command) == 0 || r.Command[0] == "":
		return nil, &ArgumentError{"command", "must name a program to run (argv, no shell)"}
	case total > maxArgv:
		return nil, &ArgumentError{"command", fmt.Sprintf("must be at most %d bytes in all", maxArgv)}
	case r.Prompt != "":
		return nil, &ArgumentError{"prompt", "is for an agent; a command takes its arguments in command"}
	}
	return slices.Clone(r.Command), nil
}

func (r StartRequest) timeout() (time.Duration, error) {
	switch {
	case r.Timeout == 0:
		return DefaultTimeout, nil
	case r.Timeout < time.Second || r.Timeout > MaxTimeout:
		return 0, &ArgumentError{"timeout", fmt.Sprintf("must be between 1s and %s", MaxTimeout)}
	}
	return r.Timeout, nil
}

// envName is what a shell takes for a variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// env is the task's environment: the request's, in name order, and the
// task's id as PILOT_TASK (whatever the request says of it).
func (r StartRequest) env(id string) ([]string, error) {
	out := make([]string, 0, len(r.Env)+1)
	for _, name := range slices.Sorted(maps.Keys(r.Env)) {
		switch {
		case !envName.MatchString(name):
			return nil, &ArgumentError{"env." + name, "is not a variable name: letters, digits and _, not starting with a digit"}
		case strings.ContainsRune(r.Env[name], 0):
			return nil, &ArgumentError{"env." + name, "must not hold a NUL character"}
		case name == "PILOT_TASK" || name == "PILOT_CAUSE":
			return nil, &ArgumentError{"env." + name, "is the sidecar's to set"}
		}
		out = append(out, name+"="+r.Env[name])
	}
	return append(out, taskEnv(id)...), nil
}

// taskEnv marks an exec as the task's: every exec a task starts carries
// its id (and the PILOT_CAUSE the sidecar's exec sets, which a network
// policy reads to name the task that made a connection).
func taskEnv(id string) []string { return []string{"PILOT_TASK=" + id} }
