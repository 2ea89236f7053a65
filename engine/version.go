package engine

import (
	"strconv"
	"strings"
)

// LoopbackSafeEngine is the first Docker Engine major version whose ports
// published on 127.0.0.1 answer only on the host's loopback. Before it,
// on Linux, the engine's iptables rules let a machine on the same LAN
// reach them through the host's address (moby #41872, fixed by moby PR
// #49325 in Engine 28.0): only the VNC password then stands between the
// LAN and the sandbox's desktop.
const LoopbackSafeEngine = 28

// EngineMajor is the major version of a Docker Engine version string
// ("20.10.24+dfsg1" is 20, "v28.0.1" 28); ok is false when the string
// does not start with a number (a development build, "master", "").
func EngineMajor(version string) (major int, ok bool) {
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end == 0 || v == "" {
		return 0, false
	}
	if end > 0 {
		v = v[:end]
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false
	}
	return n, true
}

// LoopbackLeaks says whether an engine of this version lets the LAN reach
// ports published on 127.0.0.1; known is false when the version cannot be
// read, and the caller should say it cannot tell.
func LoopbackLeaks(version string) (leaks, known bool) {
	major, ok := EngineMajor(version)
	if !ok {
		return false, false
	}
	return major < LoopbackSafeEngine, true
}
