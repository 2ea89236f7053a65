// Package activity is each sandbox's timeline (docs/activity.md): what was
// done in it, by whom, in order, kept in the user's state directory so
// that every sidecar of the user (the app's and an MCP server's) appends
// to the same one and hears what the others wrote.
//
// It owns the entries' shape, the file per project (JSON lines, appended
// under a file lock that keeps seq unique and ordered across processes),
// its bound and rotation, setting a corrupt file aside, following the
// files for new entries, and the thumbnails of acting tools. It must not
// know the tools, the protocol or Docker: its callers say what happened.
package activity
