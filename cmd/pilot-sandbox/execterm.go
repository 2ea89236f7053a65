package main

import (
	"context"
	"errors"
	"os"

	"golang.org/x/term"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// errNotATerminal is exec -t's answer when stdin is not a terminal, in
// docker exec -t's words.
var errNotATerminal = errors.New("the input device is not a TTY: exec -t needs a terminal on stdin")

// hostTerminal puts this process's terminal (its stdin) in raw mode for
// exec -t, and returns its sizes, the first now and then each change
// (SIGWINCH), until restore is called. restore puts the terminal back as
// it was: runExec defers it, so every return, a panic included, does;
// a second call does nothing more.
func hostTerminal(ctx context.Context, stdin any) (sizes <-chan service.TerminalSize, restore func(), err error) {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, nil, errNotATerminal
	}
	fd := int(f.Fd())
	size := func() service.TerminalSize {
		w, h, err := term.GetSize(fd)
		if err != nil {
			return service.TerminalSize{}
		}
		return service.TerminalSize{Width: w, Height: h}
	}
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan service.TerminalSize, 1)
	ch <- size()
	ctx, stop := context.WithCancel(ctx)
	changed, stopWatching := watchResize()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
				select {
				case <-ch: // an older size not yet given: the newest wins
				default:
				}
				ch <- size()
			}
		}
	}()
	return ch, func() {
		stop()
		stopWatching()
		term.Restore(fd, old)
	}, nil
}
