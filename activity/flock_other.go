//go:build !unix

package activity

import "os"

// flock: without flock, one process's appends are ordered by the caller's
// mutex only.
func flock(*os.File) error { return nil }
