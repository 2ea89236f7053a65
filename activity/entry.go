package activity

import (
	"context"
	"unicode/utf8"
)

// Where an entry came from (docs/protocol.md, sandbox/activity).
const (
	SourceRPC  = "rpc"  // the app, over JSON-RPC
	SourceMCP  = "mcp"  // an MCP client, named in Client
	SourceTask = "task" // a task's agent inside its sandbox
	SourceUser = "user" // the user, through the panel
)

// What an entry is.
const (
	KindTool       = "tool"
	KindExec       = "exec"
	KindPermission = "permission"
	KindTask       = "task"
	KindLifecycle  = "lifecycle"
)

// Bounds of an entry's text, in bytes.
const (
	maxName    = 100
	maxClient  = 100
	maxSummary = 600
	// maxThumbnail bounds each JPEG thumbnail: a 320-pixel-wide JPEG at
	// quality 60 of a desktop is 5 to 20 KiB; one larger is dropped.
	maxThumbnail = 48 << 10
)

// Entry is one thing done in a sandbox.
type Entry struct {
	Seq         int64  `json:"seq"`
	Time        int64  `json:"time"` // Unix milliseconds
	ProjectPath string `json:"projectPath"`
	Source      string `json:"source"`
	Client      string `json:"client,omitempty"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Summary     string `json:"summary"`
	DurationMs  int64  `json:"durationMs"`
	IsError     bool   `json:"isError"`
	// Before and After are JPEG thumbnails of the screen around an acting
	// tool (base64 in JSON).
	Before []byte `json:"before,omitempty"`
	After  []byte `json:"after,omitempty"`
}

// bounded is e with its text cut to the bounds and oversized thumbnails
// dropped.
func (e Entry) bounded() Entry {
	e.Name = Cut(e.Name, maxName)
	e.Client = Cut(e.Client, maxClient)
	e.Summary = Cut(e.Summary, maxSummary)
	if len(e.Before) > maxThumbnail {
		e.Before = nil
	}
	if len(e.After) > maxThumbnail {
		e.After = nil
	}
	return e
}

// Cut returns s cut to at most n bytes on a rune boundary, with an
// ellipsis when it was cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n - len("…")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "…"
}

// Origin is who is acting: the source, and the client's name.
type Origin struct {
	Source string
	Client string
}

type originKey struct{}

// WithOrigin marks ctx as acting for o.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginOf is who ctx acts for: the app (rpc) unless marked.
func OriginOf(ctx context.Context) Origin {
	if o, ok := OriginIn(ctx); ok {
		return o
	}
	return Origin{Source: SourceRPC}
}

// OriginIn is who ctx was marked as acting for, if it was.
func OriginIn(ctx context.Context) (Origin, bool) {
	o, ok := ctx.Value(originKey{}).(Origin)
	return o, ok
}
