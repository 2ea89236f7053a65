//go:build !windows

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// watchResize says when this process's terminal changes size (SIGWINCH).
func watchResize() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	return ch, func() { signal.Stop(ch) }
}
