package main

import (
	"context"

	units "github.com/docker/go-units"
)

// runPause freezes the project's sandbox (docs/sandbox.md, Pause).
func runPause(ctx context.Context, e *env, args []string) error {
	c, _, err := newCLI(e, "pause", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	st, err := c.manager.Pause(ctx, c.project)
	if err != nil {
		return err
	}
	c.printState(&st)
	return nil
}

// heldMemory says what memory a paused sandbox holds, if measured.
func heldMemory(n int64) string {
	if n <= 0 {
		return ""
	}
	return ", holding " + units.BytesSize(float64(n)) + " of memory"
}
