package tools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// AddTo registers the tools on an MCP server for one project (canonical),
// with the SDK's typed registration: each tool's input schema is its own
// (package args: bounds, enums and defaults included), the SDK decodes a
// call's arguments into the tool's own struct, and the call runs within
// the answer bound as a JSON-RPC tools/call does.
func (s *Set) AddTo(srv *mcp.Server, project string) {
	for _, t := range s.tools {
		t.addTo(srv, s.jobs, project)
	}
}

func (t typedTool[A]) addTo(srv *mcp.Server, js *jobs, project string) {
	tool := &mcp.Tool{Name: t.name, Description: t.desc, InputSchema: t.spec.Schema(), Annotations: t.hints}
	mcp.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest, a A) (*mcp.CallToolResult, any, error) {
		if _, marked := activity.OriginIn(ctx); !marked {
			ctx = activity.WithOrigin(ctx, mcpOrigin(req.Session))
		}
		if token := req.Params.GetProgressToken(); token != nil {
			ctx = WithProgress(ctx, progressNotifier(ctx, req.Session, token))
		}
		res, err := MCPResult(t.bounded(ctx, js, project, a))
		return res, nil, err
	})
}

// mcpOrigin names an MCP client on the timeline by the name it gave in
// initialize.
func mcpOrigin(ss *mcp.ServerSession) activity.Origin {
	o := activity.Origin{Source: activity.SourceMCP}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		o.Client = p.ClientInfo.Name
	}
	return o
}

// CheckArguments decodes a tools/call's arguments as the named tool does.
// Arguments it refuses get the error result the tool would answer, which
// names the argument in the tool's words; nil means they are fine. An
// unknown tool is ErrUnknownTool.
//
// An MCP server calls it before the SDK's own validation: the SDK accepts
// exactly what the tools' decoder accepts (package args checks this), but
// says what is wrong in JSON Schema's terms.
func (s *Set) CheckArguments(name string, arguments json.RawMessage) (*mcp.CallToolResult, error) {
	t, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	var ae *args.Error
	if err := t.check(arguments); errors.As(err, &ae) {
		return MCPResult(failure(err))
	} else if err != nil {
		return nil, err
	}
	return nil, nil
}

// MCPResult is r as the SDK sends it: images as image content, with their
// bytes.
func MCPResult(r Result) (*mcp.CallToolResult, error) {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: make([]mcp.Content, 0, len(r.Content))}
	for _, c := range r.Content {
		switch c.Type {
		case "image":
			out.Content = append(out.Content, &mcp.ImageContent{Data: c.Data, MIMEType: c.MimeType})
		default:
			out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
		}
	}
	return out, nil
}

// progressNotifier sends a call's progress as MCP progress notifications,
// numbered from 1 (MCP wants the number to grow with every notification;
// a start's stages have no common total).
func progressNotifier(ctx context.Context, ss *mcp.ServerSession, token any) func(service.Progress) {
	n := 0
	return func(p service.Progress) {
		n++
		ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: float64(n), Message: describeProgress(p),
		})
	}
}
