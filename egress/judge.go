// Package egress enforces a sandbox's network policy from outside the
// sandbox, trusting nothing inside it (docs/network.md): the helper
// container that loads the egress rules into the sandbox's network
// namespace and runs the proxy there (resources/docker/sandbox/pilot-net),
// the proxy's channel, the DNS answers with their synthetic addresses, the
// instruction of which address to dial, the connection log with its byte
// counts, what was blocked since an agent last looked, and which process
// carries a sandbox's proxy.
//
// It decides nothing: every connection and lookup goes to a Judge. It must
// not know the policy's rules or presets (netpolicy), how a user is asked
// (permission), JSON-RPC, or the sandbox's state machine (service, which
// calls it through a small hook at start and stop).
package egress

import (
	"context"
	"net/netip"
)

// Judge decides what a sandbox may reach.
type Judge interface {
	// Judge decides one connection (or, for DNS types other than A,
	// one lookup: Port 0). It blocks while the user is asked, until
	// ctx ends. It never returns an Allow without at least one Dial
	// address for a connection.
	Judge(ctx context.Context, r Request) Decision
}

// Request is one connection, or one lookup, a sandbox attempts.
type Request struct {
	Project string // canonical project path
	// Names the sandbox asked for: the DNS name behind a synthetic
	// address, the TLS SNI, the HTTP Host (lower case, no trailing dot);
	// empty for a bare IP.
	Names []string
	// Addr is the address it dialed (for a synthetic one: the zero Addr;
	// Names[0] is its name).
	Addr     netip.Addr
	Port     int
	Protocol string   // "tcp" or "udp"
	Process  *Process // a hint, may be nil
	Cause    *Cause   // a hint, may be nil
	// Learn looks up Process and Cause, which are nil until then: a
	// judge calls it before it asks the user (it may take tens of
	// milliseconds, which an allowed connection does not wait for). Nil
	// when nothing can be learned.
	Learn func(context.Context) (*Process, *Cause)
}

// Decision is a Judge's answer.
type Decision struct {
	Allow  bool
	Dial   []netip.Addr // checked addresses, in order of preference
	By     string       // "rule" | "preset" | "user" | "timeout" | "fixed"
	Rule   string       // the rule that decided, if one did
	Reason string       // one line for the agent: what was blocked and how to ask
}

// Process is the program that opened a connection, as far as the sandbox
// lets it be learned: a hint the sandbox can falsify, never a ground for
// a decision.
type Process struct {
	PID     int
	Command string
}

// Cause is what led to a connection: the tool call, exec, task or browser
// page, as the environment of the process that opened it says (PILOT_CAUSE,
// set by the sidecar on every exec). A hint like Process.
type Cause struct {
	Tool      string `json:"tool,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Exec      string `json:"exec,omitempty"`
	Task      string `json:"task,omitempty"`
	Browser   string `json:"browser,omitempty"`
}
