// Package resources embeds the files the sidecar needs at run time, so the
// binary alone can build its sandbox image.
package resources

import (
	"embed"
	"io/fs"
)

//go:embed docker/sandbox
var files embed.FS

//go:embed agent/agent.py
var agent []byte

// SandboxImage is the Docker build context of the sandbox image: the
// Dockerfile at its root, with the entrypoint and desktop configuration.
func SandboxImage() fs.FS {
	sub, err := fs.Sub(files, "docker/sandbox")
	if err != nil {
		// fs.Sub fails only for an invalid path, and this one is a constant.
		panic(err)
	}
	return sub
}

// DesktopAgent is the source of the desktop agent, the Python program the
// sidecar runs in each sandbox to drive its display. It is passed to the
// sandbox at run time, not built into the image, so it always matches the
// binary, whatever image an older container was made from.
func DesktopAgent() []byte { return agent }
