// Package netpolicy decides which connections a sandbox may make: the
// user's network policy (config.json's "network"), the narrowing a
// repository may add (.pilot/settings.json's "sandbox.network"), rules and
// how they match, the presets, the fixed denials no rule lifts, where each
// part of the policy in force came from, and the Judge that applies it to
// one connection.
//
// It owns the order of judgement (docs/protocol.md, "Network policy"):
// the fixed denials, then deny, allow, ask, then the preset; private
// ranges are denied by every preset unless an explicit allow or ask of an
// IP or CIDR names them. A name is judged by what the sandbox asked for
// and by every address it resolves to, so that DNS rebinding to the host,
// a metadata service or a private network is denied.
//
// It is pure: it reads no file, runs no container and holds no socket.
// It must not know how a connection is caught or carried (package egress),
// how a question reaches the user or how answers are kept (package
// permission, behind the Asker interface), or where the policy's parts are
// stored (projectfs, behind the Layers interface).
package netpolicy
