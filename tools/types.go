// Package tools is the agent tools: what a coding agent calls to see and
// drive a project's sandbox desktop. The shapes are MCP's (Tool, Content,
// Result), so the same tools can be served to MCP clients.
package tools

import (
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool describes one agent tool to a model. InputSchema is the schema of
// the tool's arguments struct (package args), as the MCP Go SDK takes it;
// it is shared, and must not be changed. Annotations say what the tool
// does to the sandbox (MCP's hints: hints.go), so that a host need not
// ask the user before every screenshot.
type Tool struct {
	Name        string               `json:"name"`
	Description string               `json:"description"`
	InputSchema *jsonschema.Schema   `json:"inputSchema"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
}

// Content is one part of a tool's result: text, or an image.
type Content struct {
	Type string `json:"type"` // "text" or "image"
	Text string `json:"text,omitempty"`
	// Data is an image's bytes, which JSON carries in base64. Kept as
	// bytes, an image is encoded to base64 once, straight into the reply
	// (encoding/json encodes a []byte so, without a string to scan), and
	// goes to an MCP client's ImageContent as it is.
	Data     []byte `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// Result is what a tool call returns. A failure the model can act on (a bad
// argument, a stopped sandbox) is a Result with IsError set, not an error.
type Result struct {
	Content []Content `json:"content"`
	IsError bool      `json:"isError"`
}

// Text is a result holding one text content.
func Text(text string) Result {
	return Result{Content: []Content{{Type: "text", Text: text}}}
}

// Errorf is a failed result whose text tells the model what to do.
func Errorf(text string) Result {
	return Result{Content: []Content{{Type: "text", Text: text}}, IsError: true}
}
