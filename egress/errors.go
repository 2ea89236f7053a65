package egress

import "errors"

// Sentinel errors of the package.
var (
	// ErrInUse: another pilot-sandbox process carries the sandbox's
	// proxy; the rules are in all the same.
	ErrInUse = errors.New("another pilot-sandbox process carries this sandbox's network")
	// errNotServed: a DNS type the sandbox is not answered for.
	errNotServed = errors.New("not served")
	// errProtocol: the proxy said something it must not.
	errProtocol = errors.New("the network proxy broke its protocol")
)
