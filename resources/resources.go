// Package resources embeds the files the sidecar needs at run time, so the
// binary alone can build its sandbox image.
package resources

import (
	"embed"
	"io/fs"
)

//go:embed docker/sandbox docker/browser docker/dev docker/recorder docker/agents
var files embed.FS

// seccomp is the seccomp profile of browser sandboxes: Docker's default
// (moby/profiles seccomp/default.json) with one rule added at the end,
// allowing clone, unshare and chroot, which Chromium's own sandbox needs
// (docs/browser.md, "Chromium's own sandbox").
//
//go:embed docker/seccomp/chromium.json
var seccomp string

//go:embed agent/agent.py
var agent []byte

//go:embed agent/*.py
var agentFiles embed.FS

// agentModules are the desktop agent's own modules, in the order they
// import one another: agent.py's MODULES.
var agentModules = []string{"dbuswire", "atspi", "cdp", "web", "xscreen", "perception"}

//go:embed relay/pilot_relay.py
var relayProgram string

//go:embed hints/pilot_who.py
var whoProgram string

//go:embed workspace/workspace.py
var workspaceProgram []byte

//go:embed tasks/runner.py
var taskRunner []byte

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

// BrowserImage is the build context of the browser image, a layer on the
// sandbox image (build argument DESKTOP names it).
func BrowserImage() fs.FS {
	sub, err := fs.Sub(files, "docker/browser")
	if err != nil {
		panic(err)
	}
	return sub
}

// DevImage is the build context of the dev image, a layer on the browser
// image (build argument BROWSER names it): tools to build and run a
// project inside its sandbox.
func DevImage() fs.FS {
	sub, err := fs.Sub(files, "docker/dev")
	if err != nil {
		panic(err)
	}
	return sub
}

// AgentsImage is the build context of the agent CLIs' layer, on a
// sandbox's image (build argument PILOT_BASE names it): Node.js and the
// CLIs a project or the user asks for (sandbox.agents, agents).
func AgentsImage() fs.FS {
	sub, err := fs.Sub(files, "docker/agents")
	if err != nil {
		panic(err)
	}
	return sub
}

// RecorderImage is the build context of the recorder image (package
// recording), a layer on the sandbox image (build argument DESKTOP names
// it): ffmpeg and pilot-record.
func RecorderImage() fs.FS {
	sub, err := fs.Sub(files, "docker/recorder")
	if err != nil {
		panic(err)
	}
	return sub
}

// ChromiumSeccomp is the seccomp profile (JSON) browser sandboxes run with.
func ChromiumSeccomp() string { return seccomp }

// DesktopAgent is the source of the desktop agent, the Python program the
// sidecar runs in each sandbox to drive its display. It is passed to the
// sandbox at run time, not built into the image, so it always matches the
// binary, whatever image an older container was made from.
func DesktopAgent() []byte { return agent }

// Module is one of the desktop agent's own modules: its name and source.
type Module struct {
	Name   string
	Source []byte
}

// DesktopAgentModules are the modules the desktop agent imports (the
// accessibility tree and the screen's changes: agent/perception.py and
// what it uses), in the order they import one another. They go to the
// sandbox with the agent, as its arguments (desktop.Command).
func DesktopAgentModules() []Module {
	out := make([]Module, 0, len(agentModules))
	for _, name := range agentModules {
		src, err := agentFiles.ReadFile("agent/" + name + ".py")
		if err != nil {
			// The names are constants, and embedded with the pattern.
			panic(err)
		}
		out = append(out, Module{Name: name, Source: src})
	}
	return out
}

// Relay is the source of the relay, the Python program that is the
// sandbox's end of every connection the sidecar carries (package relay).
// Like the agent, it is passed to the sandbox at run time, so it always
// matches the binary, whatever image a container was made from.
func Relay() string { return relayProgram }

// Who is the source of the program that names the process of the sandbox
// that opened a connection, and its cause (package egress). Passed at run
// time like the relay.
func Who() string { return whoProgram }

// WorkspaceProgram is the source of the program that keeps a sandbox's
// /workspace (the project's copy a task works on; workspace/ in the
// repository is its other half). Like the agent, it is passed at run time.
func WorkspaceProgram() []byte { return workspaceProgram }

// TaskRunner is the source of the program that runs a task's agent in a
// sandbox and writes what it prints to records the sidecar follows
// (tasks/ in the repository is its other half).
func TaskRunner() []byte { return taskRunner }
