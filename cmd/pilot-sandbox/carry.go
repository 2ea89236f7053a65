package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// The commands of this file do what only the protocol did (sandbox/ports/
// expose, sandbox/ports/forward, sandbox/browser: docs/protocol.md): the
// relays they make run in this process, so each stays running while it
// carries them, says so, and ends them on Ctrl-C or when the sandbox
// stops (docs/cli.md, Carry a port).

// runExpose makes a port of the sandbox answer on the host's 127.0.0.1.
func runExpose(ctx context.Context, e *env, args []string) error {
	c, fs, err := newCLI(e, "expose", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	port, _, err := portArgument(e, "expose PORT", fs.Args(), false)
	if err != nil {
		return err
	}
	return c.carry(ctx, func(car *ports.Carrier) (string, func(), error) {
		ex, err := car.ExposePort(ctx, c.project, port)
		if err != nil {
			return "", nil, err
		}
		return ex.URL, nil, nil
	})
}

// runForward makes the sandbox's localhost:PORT reach the host's
// 127.0.0.1:HOSTPORT. A forward this command made ends with it; one the
// project had already (the app's, the panel's) is left as it was.
func runForward(ctx context.Context, e *env, args []string) error {
	c, fs, err := newCLI(e, "forward", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	port, hostPort, err := portArgument(e, "forward PORT[:HOSTPORT]", fs.Args(), true)
	if err != nil {
		return err
	}
	return c.carry(ctx, func(car *ports.Carrier) (string, func(), error) {
		had, err := car.ForwardedPorts(c.project)
		if err != nil {
			return "", nil, err
		}
		fw, err := car.ForwardPort(ctx, c.project, port, hostPort)
		if err != nil {
			return "", nil, err
		}
		if fw.Error != "" {
			car.CloseForward(c.project, port)
			return "", nil, fmt.Errorf("forward %d: %s", port, fw.Error)
		}
		undo := func() { car.CloseForward(c.project, port) }
		for _, f := range had {
			if f.Port == port && f.HostPort == fw.HostPort {
				undo = nil // the project's own: kept
			}
		}
		line := fmt.Sprintf("localhost:%d in the sandbox reaches 127.0.0.1:%d here", port, fw.HostPort)
		return line, undo, nil
	})
}

// runBrowser prints the DevTools address of the sandbox's Chromium,
// starting it if needed, for Playwright's connectOverCDP or Puppeteer's
// connect.
func runBrowser(ctx context.Context, e *env, args []string) error {
	c, _, err := newCLI(e, "browser", args, nil)
	if err != nil {
		return err
	}
	defer c.close()
	return c.carry(ctx, func(car *ports.Carrier) (string, func(), error) {
		address, err := car.Browser(ctx, c.project)
		return address, nil, err
	})
}

// carry runs a carrier for the project's sandbox, makes what start makes
// (its address goes to stdout, alone on its line, for a script), and
// waits for Ctrl-C or the sandbox to stop. undo, if any, runs before the
// carrier closes.
func (c *cli) carry(ctx context.Context, start func(*ports.Carrier) (string, func(), error)) error {
	events, unsubscribe := c.manager.Subscribe()
	defer unsubscribe()
	follow, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Follow Docker, so that a stop by anyone ends the command.
	wg.Go(func() { c.manager.Run(follow) })
	defer func() { cancel(); wg.Wait() }()
	car := newCarrier(c.app, c.project)
	defer car.Close()
	line, undo, err := start(car)
	if err != nil {
		return err
	}
	if undo != nil {
		defer undo()
	}
	fmt.Fprintln(c.env.stdout, line)
	fmt.Fprintln(c.env.stderr, "carried by this process: press Ctrl-C to end it")
	return untilStopped(ctx, events, c.project)
}

// untilStopped waits for ctx to end (nil: the user's Ctrl-C) or for the
// project's sandbox to stop (an error saying so). A paused sandbox keeps
// what is carried for its resume.
func untilStopped(ctx context.Context, events <-chan service.Event, project string) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return errors.New("the sandbox's events ended")
			}
			if ev.Kind != service.EventState || ev.Project != project {
				continue
			}
			if ev.State == nil {
				return errors.New("the sandbox was removed: nothing left to carry")
			}
			if s := ev.State.Status; s == service.StatusStopping || s == service.StatusStopped || s == service.StatusError {
				return fmt.Errorf("the sandbox is %s: nothing left to carry", s)
			}
		}
	}
}

// portArgument reads PORT, or PORT:HOSTPORT when withHost (HOSTPORT 0
// when not given: the same number).
func portArgument(e *env, usage string, args []string, withHost bool) (int, int, error) {
	if len(args) != 1 {
		fmt.Fprintln(e.stderr, "usage: pilot-sandbox "+usage)
		return 0, 0, errUsage
	}
	text, hostText, hasHost := strings.Cut(args[0], ":")
	if hasHost && !withHost {
		return 0, 0, fmt.Errorf("%q: a port of the sandbox is one number", args[0])
	}
	port, err := portNumber(text)
	if err != nil {
		return 0, 0, err
	}
	hostPort := 0
	if hasHost {
		if hostPort, err = portNumber(hostText); err != nil {
			return 0, 0, err
		}
	}
	return port, hostPort, nil
}

func portNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port: a number from 1 to 65535", s)
	}
	return n, nil
}
