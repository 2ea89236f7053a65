package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

func jsonInt(n int) json.RawMessage { return json.RawMessage(strconv.Itoa(n)) }

func startTool(sb Sandbox) tool {
	desc := "Start the project's sandbox, a Linux desktop in a container, if it is not running (the first " +
		"start can take a minute). Returns its state; then take a screenshot to see the screen."
	t := define("sandbox_start", desc, starts, func(ctx context.Context, project string, _ noArgs) (Result, error) {
		defer followProgress(ctx, sb, project)()
		st, err := sb.Start(ctx, project)
		if err != nil {
			return Result{}, err
		}
		return Text(fmt.Sprintf("The sandbox is running: a %dx%d Linux desktop (fluxbox, with xterm). "+
			"The user can watch it. Take a screenshot to see the screen.", st.Display.Width, st.Display.Height)), nil
	})
	// A second start, while a first one builds the image, waits for it.
	t.joinable = true
	return t
}

// progressFeed is a Sandbox that tells how its long operations go;
// *service.Manager is one.
type progressFeed interface {
	Subscribe() (<-chan service.Event, func())
}

// followProgress passes the project's progress to the tool's job until the
// returned function is called.
func followProgress(ctx context.Context, sb Sandbox, project string) (stop func()) {
	feed, ok := sb.(progressFeed)
	if !ok {
		return func() {}
	}
	events, unsubscribe := feed.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			if ev.Kind == service.EventProgress && ev.Project == project {
				reportProgress(ctx, ev.Progress)
			}
		}
	}()
	return func() { unsubscribe(); <-done }
}

func stopTool(sb Sandbox) tool {
	desc := "Stop the project's sandbox. Its files and installed programs are kept for the next start."
	return define("sandbox_stop", desc, stops, func(ctx context.Context, project string, _ noArgs) (Result, error) {
		if _, err := sb.Stop(ctx, project); err != nil && !errors.Is(err, service.ErrNoSandbox) {
			return Result{}, err
		}
		return Text("The sandbox is stopped; its files are kept for the next start."), nil
	})
}

type waitArgs struct {
	Seconds   *float64 `json:"seconds,omitempty" jsonschema:"Seconds to wait."`
	Until     string   `json:"until,omitempty" jsonschema:"stable: instead of seconds, wait until the screen has been still for 0.3 s (a page loaded, an animation ended), at most timeoutMs."`
	TimeoutMs int      `json:"timeoutMs,omitzero" jsonschema:"With until or handOver: the longest wait, in milliseconds (10000 for until, 30000 for handOver, when left out)."`
	HandOver  string   `json:"handOver,omitempty" jsonschema:"Instead of seconds: ask the user to take over the desktop (a login, a captcha, a decision), saying why in a few words; the user sees this in their panel. Returns when the user gives control back, or at timeoutMs."`
}

// Bounds of sandbox_wait's timeoutMs.
const (
	defaultStableTimeoutMs = 10000
	// maxHandOverReason bounds what the agent asks the user, in characters.
	maxHandOverReason  = 500
	maxStableTimeoutMs = MaxWait * 1000
)

func (waitArgs) TuneSchema(s *jsonschema.Schema) {
	bound(s.Properties["seconds"], 0, MaxWait)
	s.Properties["until"].Enum = []any{"stable"}
	// No default in the schema: the decoder would fill it in, and
	// timeoutMs without until is refused.
	bound(s.Properties["timeoutMs"], 1, maxStableTimeoutMs)
	textBounds(s, "handOver", 1, maxHandOverReason)
}

// check says what is wrong with a wait's arguments: seconds or until, one.
func (a waitArgs) check() error {
	switch {
	case a.HandOver != "" && (a.Seconds != nil || a.Until != ""):
		return argError("handOver", "waits instead of seconds and until: give one of them")
	case a.Seconds != nil && a.Until != "":
		return argError("until", "waits instead of seconds: give seconds, or until, not both")
	case a.Seconds == nil && a.Until == "" && a.HandOver == "":
		return argError("seconds", fmt.Sprintf("is required: the seconds to wait (0 to %d), or until \"stable\" instead", MaxWait))
	case a.TimeoutMs != 0 && a.Until == "" && a.HandOver == "":
		return argError("timeoutMs", `applies to until and handOver only: add "until": "stable", or leave timeoutMs out`)
	}
	return nil
}

func waitTool(sb Sandbox, js *jobs) tool {
	desc := fmt.Sprintf("Wait a number of seconds, 0 to %d, for something in the sandbox to happen (a page to load, a "+
		"program to start). Then take a screenshot to check. until \"stable\" instead waits until the screen has "+
		"been still for 0.3 s, at most timeoutMs (10000 when left out), and says how long that took. When a call "+
		"was left running in the background (a first sandbox_start, a long sandbox_exec), seconds waits for that "+
		"instead and returns its result as soon as it ends. handOver \"REASON\" instead asks the user to take over the "+
		"desktop (a login, a captcha, a decision only they can make) and returns when they give control back, at most "+
		"timeoutMs (30000 when left out); while they hold it, clicks, typing and keys are refused.", MaxWait)
	return define("sandbox_wait", desc, looks, func(ctx context.Context, project string, a waitArgs) (Result, error) {
		if err := a.check(); err != nil {
			return Result{}, err
		}
		if a.HandOver != "" {
			return handOver(ctx, js, project, a.HandOver, time.Duration(cmp.Or(a.TimeoutMs, maxStableTimeoutMs))*time.Millisecond)
		}
		if a.Until != "" {
			timeout := time.Duration(cmp.Or(a.TimeoutMs, defaultStableTimeoutMs)) * time.Millisecond
			return waitStable(ctx, sb, project, timeout)
		}
		t := time.NewTimer(time.Duration(*a.Seconds * float64(time.Second)))
		defer t.Stop()
		if pending := js.pending(project); len(pending) > 0 {
			return js.waitFor(ctx, pending, t.C)
		}
		select {
		case <-t.C:
			return Text(fmt.Sprintf("Waited %s seconds.", strconv.FormatFloat(*a.Seconds, 'f', -1, 64))), nil
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	})
}
