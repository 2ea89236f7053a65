package tools

import "github.com/modelcontextprotocol/go-sdk/mcp"

// What each tool does to the sandbox, as MCP's tool annotations say it
// (hints a host may use to decide what to ask the user first; they promise
// nothing). Left out, MCP takes a tool to be able to destroy, and to reach
// the world outside.
var (
	// looks: only reads the sandbox (a screenshot, the clipboard, a wait).
	looks = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}
	// acts: input to the desktop. What a click does is up to the program
	// under it, but the tool itself only presses, moves and types, inside
	// the sandbox; twice is not once. It reaches the world outside as far
	// as the sandbox's browser does.
	acts = &mcp.ToolAnnotations{DestructiveHint: no()}
	// moves: input whose repetition changes nothing more (the pointer moved
	// to where it is, the clipboard set to what it holds).
	moves = &mcp.ToolAnnotations{DestructiveHint: no(), IdempotentHint: true}
	// starts: brings the sandbox up, or finds it up.
	starts = &mcp.ToolAnnotations{DestructiveHint: no(), IdempotentHint: true, OpenWorldHint: no()}
	// stops: ends every program running in the sandbox (its files stay):
	// what they held unsaved is lost.
	stops = &mcp.ToolAnnotations{DestructiveHint: yes(), IdempotentHint: true, OpenWorldHint: no()}
	// runs: any command, which may delete files or reach the network.
	runs = &mcp.ToolAnnotations{DestructiveHint: yes(), OpenWorldHint: yes()}
)

func no() *bool  { b := false; return &b }
func yes() *bool { b := true; return &b }
