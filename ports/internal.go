package ports

import (
	"slices"
	"strconv"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	modelgateway "github.com/pilot-sandbox/pilot-sandbox/gateway"
)

// Egress proxy's ports in every sandbox with a network
// (resources/docker/sandbox/pilot-net/proxy.py: TRANSPARENT_PORT,
// DNS_PORT, HTTP_PORT; a test reads them there).
const (
	proxyTransparentPort = 15001
	proxyDNSPort         = 15053
	proxyHTTPPort        = 15080
)

// internalPorts are the ports the sandbox's own machinery listens on:
// the desktop's VNC and noVNC WebSocket, Chromium's DevTools, the egress
// proxy's and the model gateway's. Exposing one would hand the desktop
// or the browser to whoever reaches the host port, and none is the
// user's program: ListeningPorts leaves them out. Most are another
// user's than the sandbox user's, which leaves them out as well, but
// Chromium runs as the sandbox user, and so does the desktop in images
// older than the desktop user (desktop.DesktopUser).
var internalPorts = internalSet()

func internalSet() map[int]bool {
	devtools, _ := strconv.Atoi(devtoolsPort)
	out := map[int]bool{desktop.VNCPort: true, desktop.NoVNCPort: true, devtools: true,
		proxyTransparentPort: true, proxyDNSPort: true, proxyHTTPPort: true}
	for _, p := range modelgateway.SandboxPorts {
		out[p] = true
	}
	return out
}

// usersOwn is what of ls the user may expose: the sandbox user's
// listeners but internalPorts; and the forwarded ports' listeners (the
// desktop user's relays), which the panel shows as such.
func usersOwn(ls []Listening, forwarded []Forwarded) []Listening {
	return slices.DeleteFunc(ls, func(l Listening) bool {
		isForwarded := slices.ContainsFunc(forwarded, func(f Forwarded) bool { return f.Port == l.Port })
		return !isForwarded && (!l.usersOwn || internalPorts[l.Port])
	})
}
