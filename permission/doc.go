// Package permission is the one "may it?" flow (docs/protocol.md,
// "Permission requests"): a sandbox, or an agent inside it, needs
// something only the user may grant (a network destination, a preview
// port, more memory); the Broker puts the question to whoever can answer
// and holds what waits until the answer, or until the question expires.
//
// It owns the questions (ids, expiry, coalescing of identical ones, the
// bound on how many wait per sandbox), the answers (once, for the session,
// always, deny) and the decisions that outlive a question: those for the
// session in memory until the sandbox stops, those kept "always" in the
// user's state (projectfs.Decisions), never in the repository. Nothing of
// a pending question survives the process: a restart ends the connections
// that waited (their carrier closes them) and keeps the kept decisions.
//
// It must not know what is asked about: a question's detail, cause and
// rule are the asker's (netpolicy's Judge for the network), and how a
// question reaches a person (JSON-RPC notifications, MCP elicitation, a
// terminal) is its listeners'.
package permission
