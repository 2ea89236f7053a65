//go:build unix

package projectfs

import (
	"errors"
	"os"
	"syscall"
)

// tryFlock takes an exclusive advisory lock on f without waiting; it
// reports false when another open file holds it.
func tryFlock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func unflock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
