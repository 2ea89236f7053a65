package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Gate is who holds the sandboxes' desktops, the agent or the user
// (docs/activity.md, Control); *activity.Control is one.
type Gate interface {
	State(project string) activity.ControlState
	Ask(project, reason string) error
}

// Control makes the acting tools refuse while the user holds a sandbox's
// desktop, and lets sandbox_wait hand it over (handOver).
func Control(g Gate) Option { return func(s *Set) { s.jobs.gate = g } }

// actingTools are the tools that move the pointer or press keys: while
// the user holds the desktop they answer userHasControl. Looking
// (screenshot, hover's pointer excepted), the clipboard and exec go on.
var actingTools = map[string]bool{
	"sandbox_click": true, "sandbox_double_click": true, "sandbox_right_click": true, "sandbox_middle_click": true,
	"sandbox_drag": true, "sandbox_scroll": true, "sandbox_type": true, "sandbox_key": true,
}

// userHasControl is an acting tool's answer while the user holds the
// desktop: an error result the model can act on (wait), never a failure
// of the call.
func userHasControl() Result {
	return Errorf("The user has control of the sandbox's desktop (they took over in the Sandbox panel), so mouse and " +
		"keyboard actions are refused until they give it back. Wait (sandbox_wait with seconds), then take a screenshot " +
		"and go on; do not try to work around it.")
}

// refused says whether the user holds the project's desktop and the tool
// acts on it.
func (js *jobs) refused(project, tool string) bool {
	return js.gate != nil && actingTools[tool] && js.gate.State(project).Holder == activity.HolderUser
}

// handOverPoll is how often a handOver looks whether the user gave control
// back (one read of a small file), and handOverProgress how often it says
// it still waits.
const (
	handOverPoll     = 250 * time.Millisecond
	handOverProgress = 5 * time.Second
)

// handOver asks the user to take over the desktop for reason and waits,
// at most timeout, until the user gives control back.
func handOver(ctx context.Context, js *jobs, project, reason string, timeout time.Duration) (Result, error) {
	if js.gate == nil {
		return Errorf("No one can take over this sandbox's desktop here: ask the user in your reply instead."), nil
	}
	if err := js.gate.Ask(project, reason); err != nil {
		return Result{}, fmt.Errorf("ask the user: %w", err)
	}
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(handOverPoll)
	defer poll.Stop()
	taken, told := false, start
	for {
		st := js.gate.State(project)
		taken = taken || st.Holder == activity.HolderUser
		if st.Holder == activity.HolderAgent && st.Reason == "" {
			return Text(fmt.Sprintf("The user gave control back after %s s. Take a screenshot to see what they did, then go on.",
				seconds(time.Since(start).Round(100*time.Millisecond)))), nil
		}
		select {
		case <-deadline.C:
			return handOverTimedOut(taken, timeout), nil
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-poll.C:
		}
		if time.Since(told) >= handOverProgress {
			told = time.Now()
			reportProgress(ctx, service.Progress{ProjectPath: project, Stage: "handOver", Message: handOverNote(taken, start)})
		}
	}
}

func handOverNote(taken bool, start time.Time) string {
	who := "Waiting for the user to take over"
	if taken {
		who = "The user has control"
	}
	return fmt.Sprintf("%s (%d s)", who, int(time.Since(start).Seconds()))
}

func handOverTimedOut(taken bool, timeout time.Duration) Result {
	if taken {
		return Text(fmt.Sprintf("The user took over but has not given control back after %s s. Call sandbox_wait with "+
			"handOver again to keep waiting (your acting tools are refused meanwhile).", seconds(timeout)))
	}
	return Text(fmt.Sprintf("The user has not taken over after %s s; the request still shows in their panel. Call "+
		"sandbox_wait with handOver again to keep waiting, or go on another way.", seconds(timeout)))
}
