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

// dockerDNS is the address Docker's embedded DNS listens on in a
// container of a user-defined network (on a port of its choosing), as
// /proc/net/tcp writes it: 127.0.0.11, little-endian hex.
const dockerDNS = "0B00007F"

// internalPorts are the ports the sandbox's own machinery listens on:
// the desktop's VNC and noVNC WebSocket, Chromium's DevTools, the egress
// proxy's and the model gateway's. Exposing one would hand the desktop
// or the browser to whoever reaches the host port, and none is the
// user's program: ListeningPorts leaves them out.
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

// usersOwn is ls without the sandbox's own listeners (internalPorts).
func usersOwn(ls []Listening) []Listening {
	return slices.DeleteFunc(ls, func(l Listening) bool { return internalPorts[l.Port] })
}
