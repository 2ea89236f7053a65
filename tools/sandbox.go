package tools

import (
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
	return define("sandbox_start", desc, func(ctx context.Context, project string, _ noArgs) (Result, error) {
		st, err := sb.Start(ctx, project)
		if err != nil {
			return Result{}, err
		}
		return Text(fmt.Sprintf("The sandbox is running: a %dx%d Linux desktop (fluxbox, with xterm). "+
			"The user can watch it. Take a screenshot to see the screen.", st.Display.Width, st.Display.Height)), nil
	})
}

func stopTool(sb Sandbox) tool {
	desc := "Stop the project's sandbox. Its files and installed programs are kept for the next start."
	return define("sandbox_stop", desc, func(ctx context.Context, project string, _ noArgs) (Result, error) {
		if _, err := sb.Stop(ctx, project); err != nil && !errors.Is(err, service.ErrNoSandbox) {
			return Result{}, err
		}
		return Text("The sandbox is stopped; its files are kept for the next start."), nil
	})
}

type waitArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"Seconds to wait."`
}

func (waitArgs) TuneSchema(s *jsonschema.Schema) { bound(s.Properties["seconds"], 0, MaxWait) }

func waitTool() tool {
	desc := fmt.Sprintf("Wait a number of seconds, 0 to %d, for something in the sandbox to happen (a page to load, a "+
		"program to start). Then take a screenshot to check.", MaxWait)
	return define("sandbox_wait", desc, func(ctx context.Context, project string, a waitArgs) (Result, error) {
		t := time.NewTimer(time.Duration(a.Seconds * float64(time.Second)))
		defer t.Stop()
		select {
		case <-t.C:
			return Text(fmt.Sprintf("Waited %s seconds.", strconv.FormatFloat(a.Seconds, 'f', -1, 64))), nil
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	})
}
