package service

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Status is where a sandbox is in its life.
type Status string

const (
	StatusStarting Status = "starting"
	StatusRunning  Status = "running"
	StatusStopping Status = "stopping"
	StatusStopped  Status = "stopped"
	StatusError    Status = "error"
)

// Display is the virtual display's size in pixels.
type Display struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// DefaultDisplay is the display size of a sandbox unless configured otherwise.
var DefaultDisplay = Display{Width: 1280, Height: 800}

// State is what a client sees of one project's sandbox (PROTOCOL.md,
// SandboxState). Times are milliseconds since the Unix epoch.
type State struct {
	ProjectPath   string  `json:"projectPath"`
	ContainerID   string  `json:"containerId"`
	ContainerName string  `json:"containerName"`
	Image         string  `json:"image"`
	Status        Status  `json:"status"`
	WSPort        int     `json:"wsPort"`
	VNCPort       int     `json:"vncPort"`
	ViewerURL     string  `json:"viewerUrl"`
	WatchURL      string  `json:"watchUrl"`
	Display       Display `json:"display"`
	CreatedAt     int64   `json:"createdAt"`
	StartedAt     int64   `json:"startedAt,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// Container ports of the desktop.
const (
	vncPort   = 5900
	novncPort = 6080
)

// vncSecret holds a sandbox's two VNC passwords. RFB's VNC authentication
// uses only the first 8 characters of a password, so each is exactly 8.
type vncSecret struct {
	Control string // full control
	View    string // view only, enforced by the VNC server
}

// passwdFile renders the secret in x11vnc's -passwdfile format: the first line
// is the full-control password, those after __BEGIN_VIEWONLY__ are view-only.
func (s vncSecret) passwdFile() []byte {
	return []byte(s.Control + "\n__BEGIN_VIEWONLY__\n" + s.View + "\n")
}

// viewerURLs builds the addresses of a running sandbox's desktop on its noVNC
// port: viewer takes control, watch connects with the view-only password.
// The password travels in the fragment, which a browser never sends.
//
// The page is the sandbox's own viewer (resources/docker/sandbox/viewer),
// which works in any frame, when the container says it has one (LabelViewer);
// containers made from older images get noVNC's vnc.html, which takes the
// same fragment parameters.
func viewerURLs(wsPort int, viewerPath string, s vncSecret) (viewer, watch string) {
	if wsPort == 0 {
		return "", ""
	}
	page, common := "vnc.html", []string{"autoconnect=true", "reconnect=true", "resize=scale"}
	if viewerPathPattern.MatchString(viewerPath) {
		page, common = viewerPath, nil
	}
	build := func(extra []string, password string) string {
		params := append(slices.Clone(common), extra...)
		if password != "" {
			params = append(params, "password="+url.PathEscape(password))
		}
		return fmt.Sprintf("http://127.0.0.1:%d/%s#%s", wsPort, page, strings.Join(params, "&"))
	}
	return build(nil, s.Control), build([]string{"view_only=true"}, s.View)
}

// viewerPathPattern is what a LabelViewer value must look like to be used:
// a relative path of plain file names.
var viewerPathPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*\.html$`)

// statusOf reads a container's status the way a user would put it. stopping
// says whether the sidecar itself is stopping it, so that a kill at the end of
// the grace period is a stop, not a crash.
func statusOf(c Container, stopping bool) (Status, string) {
	switch {
	case c.Running && c.State == "paused":
		return StatusError, fmt.Sprintf("the container is paused: run docker unpause %s", c.Name)
	case c.Running:
		return StatusRunning, ""
	case c.State == "created":
		return StatusStopped, ""
	case c.ExitCode == 0 || c.ExitCode == 143 || stopping:
		// 143: the entrypoint died of SIGTERM, which only a stop sends.
		// Docker's OOMKilled stays set after a process in the sandbox was
		// killed for memory while the desktop lived on: a stop is a stop.
		return StatusStopped, ""
	case c.OOMKilled:
		return StatusError, "the sandbox ran out of memory and was stopped"
	case c.State == "dead" || c.State == "removing":
		return StatusError, fmt.Sprintf("the container is %s", c.State)
	case c.ExitCode == 137:
		return StatusError, "the sandbox was killed from outside (exit code 137)"
	default:
		msg := fmt.Sprintf("the sandbox's desktop exited unexpectedly (exit code %d)", c.ExitCode)
		if c.Error != "" {
			msg += ": " + c.Error
		}
		return StatusError, msg
	}
}

// stateOf builds the client's view of a container.
func stateOf(project string, c Container, secret vncSecret, display Display, stopping bool) State {
	st := State{
		ProjectPath:   project,
		ContainerID:   c.ID,
		ContainerName: c.Name,
		Image:         c.Image,
		Display:       display,
		CreatedAt:     millis(c.CreatedAt),
	}
	st.Status, st.Error = statusOf(c, stopping)
	if st.Status == StatusRunning {
		st.WSPort = c.Ports[novncPort]
		st.VNCPort = c.Ports[vncPort]
		st.StartedAt = millis(c.StartedAt)
		st.ViewerURL, st.WatchURL = viewerURLs(st.WSPort, c.Labels[LabelViewer], secret)
	}
	return st
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// sameState says whether a change is worth an event.
func sameState(a, b *State) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
