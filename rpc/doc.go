// Package rpc serves the sidecar's JSON-RPC 2.0 protocol (docs/protocol.md)
// over any jsonrpc2.ObjectStream: stdio with LSP or NDJSON framing,
// WebSocket, or an in-memory pipe in tests, each a wire.Stream. Package
// rpc/wire carries the messages and fills in what sourcegraph/jsonrpc2
// lacks; this package decides what each method does.
//
// The parts:
//
//   - methods.go: the method table. One typed row per method (typed,
//     with afterReconcile, mayFail, inline, notification) drives the
//     dispatch, the strict decoding of params (package args), the OpenRPC
//     document of rpc.discover (openrpc.go, results.go) and the errors it
//     lists.
//   - errors.go: what every error means to a client, decided once (toWire)
//     from the domain's sentinels and types; nothing matches on message
//     text.
//   - server.go, dispatch.go, events.go, session.go: a connection's
//     session (shutdown, exit, the sandboxes' events sent before the reply
//     of the call that caused them) and the dispatch of each message.
//   - one file per handler group (lifecycle.go, exec.go, files.go,
//     ports.go, browser.go, screen.go, settings.go, tools.go): the slice of
//     the domain the group needs, as a small interface, its params and
//     results, and its handlers. A handler decodes nothing and decides no
//     error code: it gets typed params, calls its slice, and returns.
//
// NewServer takes Services, which names the value serving each slice, so
// that the manager, the ports' carrier and the agent tools can each serve
// their own (cmd/pilot-sandbox, sidecarServices).
//
// To add a group (the wave-3 methods of docs/protocol.md: permission
// requests, network policy, tasks, activity, recording, control):
//
//  1. A file, say permission.go, with the group's slice interface
//     (Permissions: the methods of the domain it calls, as the domain
//     package names them), its params and results (a params struct's tags
//     are its schema; TuneSchema adds bounds), and its handlers, each
//     func (s *Server) name(ctx, *session, P) (R, error) calling
//     s.svc.Permissions.
//  2. Its field in Services, and the value that serves it in
//     cmd/pilot-sandbox's sidecarServices.
//  3. Its rows in methodTable, where rpc.discover is to list them: typed
//     with the method's name and description, afterReconcile if its answer
//     depends on the sandboxes found at startup, mayFail with the errors it
//     may answer. A group of many methods may keep its rows in its file, as
//     files.go does (fileMethods), spliced into the table.
//  4. A new error code, if any: its constant and errorTable row, and its
//     case in toWire (errors.go), from a sentinel or type of the domain.
//     A shared result type gets its name in schemaNames (results.go); a
//     notification the group sends, its row in openRPC's notifications
//     (openrpc.go), sent through sess.conn.Notify or, for an event of the
//     service, eventNotification (events.go).
//  5. Tests: the fake's methods of the slice (fake_test.go, or a
//     fake_<group>_test.go as fake_files_test.go), a conversation in
//     testdata/conversations, and go test ./rpc -update to regenerate the
//     transcripts and testdata/openrpc.json (review the diff: it is the
//     protocol). The JavaScript client gets its wrapper (ui/client, and
//     the table of ui/test/discover.test.js).
package rpc
