// Package desktop is the channel into a sandbox's desktop: the facts the
// image and the sidecar share (its user, display, ports), the desktop agent
// that drives the display (pointer, keyboard, screenshots, clipboard), the
// check that a desktop really answers, and the VNC passwords and viewer
// addresses of a run.
//
// It knows nothing of Docker or of the sandbox's life: the caller gives it
// a stream to the agent's process (Session) and says what a failure means
// (Conn). Everything it reads from the sandbox is bounded in size.
package desktop

import "time"

// In-container facts the sidecar relies on (resources/docker/sandbox).
const (
	// User is the unprivileged user every exec runs as (and, in images
	// older than DesktopUser, the desktop too).
	User = "sandbox"
	// DesktopUser runs the desktop and its agent in images that say so (the
	// label pilot.sandbox.desktop-user): another uid than User's, so that
	// nothing an exec starts can signal, trace or read them.
	DesktopUser = "desktop"
	// DesktopGID is DesktopUser's group, which alone may read the VNC
	// passwords.
	DesktopGID = 1001
	// UID is User's numeric ID.
	UID = 1000
	// Home is User's home directory.
	Home = "/home/sandbox"
	// DisplayEnv names the X display in the environment of every exec.
	DisplayEnv = "DISPLAY=:99"
	// ResolutionEnv is the variable that sets the display's size at creation.
	ResolutionEnv = "RESOLUTION"
	// VNCPort and NoVNCPort are the container ports of the VNC server and of
	// websockify serving noVNC.
	VNCPort   = 5900
	NoVNCPort = 6080
)

// GuardCommand runs pilot-pidguard, which ends fork floods, as the exec's
// user (User): the desktop's user may not signal User's processes. No
// setsid around it: an exec's process already leads a session and process
// group of its own, which the guard leaves alone.
// Its log stays in the sandbox, where its user can write.
var GuardCommand = []string{"/usr/local/bin/pilot-pidguard", "/tmp/pilot-pidguard.log"}

// Display is the virtual display's size in pixels.
type Display struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// DefaultDisplay is the display size of a sandbox unless configured otherwise.
var DefaultDisplay = Display{Width: 1280, Height: 800}

// ProbeTimeout bounds one readiness probe.
const ProbeTimeout = 3 * time.Second
