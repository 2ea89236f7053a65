package mcpserver

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPHandler serves the project's tools over MCP's streamable HTTP: the
// agent inside the sandbox reaches them this way (docs/models.md), its
// caller having checked who asks. The switch is read when the server is
// made and not followed: its caller gives one that does not change.
func (s *Server) HTTPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
}
