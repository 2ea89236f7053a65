package relay

import "github.com/pilot-sandbox/pilot-sandbox/resources"

// Roles of the relay program (resources/relay/pilot_relay.py says what
// each does and prints).
const (
	// RoleConnect PORT: one connection to 127.0.0.1:PORT, started ahead
	// (Pool).
	RoleConnect = "connect"
	// RoleListen PORT NAME CAP CARRY: a forwarded port's listener, CARRY
	// the name of what it carries (ports/carried.go).
	RoleListen = "listen"
	// RoleTake NAME: a forwarded connection's relay, from the listener
	// NAME.
	RoleTake = "take"
	// RoleGateway PORT: an exposed port's direct route.
	RoleGateway = "gateway"
)

// Command is the argv that runs the relay program in role with args. The
// source goes whole on the command line, as the desktop agent's does, so
// any image with Python runs it, older containers included; -I keeps the
// environment and the working directory out of its imports (it runs as a
// user the sandbox's programs must not reach), -S skips the site module,
// a third of Python's start.
func Command(role string, args ...string) []string {
	return append([]string{"python3", "-I", "-S", "-c", resources.Relay(), role}, args...)
}
