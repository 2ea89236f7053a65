package ports

import (
	"strconv"

	"github.com/pilot-sandbox/pilot-sandbox/relay"
)

// WarmRelays is how many relays wait in the pool of a project's exposed
// port (-1 if it is not exposed), for the benchmarks.
func WarmRelays(c *Carrier, project string, port int) int {
	x := c.ex.find(project, port)
	if x == nil {
		return -1
	}
	return x.pool.Waiting()
}

// ExecOnly makes c carry every connection of its exposed and forwarded
// ports over exec relays, never the direct route, so that tests cover
// both.
func ExecOnly(c *Carrier) {
	c.ex.execOnly = true
	c.fw.execOnly = true
}

// Direct says whether a project's exposed port takes the direct route.
func Direct(c *Carrier, project string, port int) bool {
	x := c.ex.find(project, port)
	return x != nil && x.gw != nil
}

// ForwardDirect says whether a project's forwarded port takes the direct
// route.
func ForwardDirect(c *Carrier, project string, port int) bool {
	l := c.fw.liveListener(project, port)
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.direct != nil
}

// ForwardAddress is the container's address a forwarded port's listener
// takes direct connections on ("" when it has no direct route).
func ForwardAddress(c *Carrier, project string, port int) string {
	l := c.fw.liveListener(project, port)
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.direct == nil {
		return ""
	}
	return l.direct.addr
}

// RelayCommand is the argv of an exposed connection's relay to port, for
// the benchmark of its start.
func RelayCommand(port int) []string { return relay.Command(relay.RoleConnect, strconv.Itoa(port)) }

// DevToolsRelays is how many DevTools relays c keeps.
func DevToolsRelays(c *Carrier) int {
	c.devtools.mu.Lock()
	defer c.devtools.mu.Unlock()
	return len(c.devtools.byProject)
}

// ForwardCarried says whether a project's forwarded port is carried by
// another process's listener (carried.go).
func ForwardCarried(c *Carrier, project string, port int) bool {
	c.fw.mu.Lock()
	defer c.fw.mu.Unlock()
	set := c.fw.projects[project]
	return set != nil && set.carried[port]
}
