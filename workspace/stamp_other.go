//go:build !linux

package workspace

import "io/fs"

// sysStamp: elsewhere the stamp is the size, modification time and mode
// alone (macOS and Windows name these fields otherwise; the sidecar's
// sandboxes run where Docker does, and its tests on Linux).
func sysStamp(fs.FileInfo) (int64, uint64) { return 0, 0 }
