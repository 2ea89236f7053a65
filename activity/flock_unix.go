//go:build unix

package activity

import (
	"os"
	"syscall"
)

// flock takes an exclusive advisory lock on f, waiting for it: held for
// one append, it is free within milliseconds.
func flock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
