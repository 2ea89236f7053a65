// Package mcpserver serves one project's agent tools over the Model Context
// Protocol, with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// The tools are package tools' own, registered with the SDK's typed
// registration: the same names, descriptions, schemas and results the
// JSON-RPC server gives, and the same answer bound. This package adds what
// an MCP server needs around them: the project's agent-tools switch, which
// adds or removes them (the SDK then sends notifications/tools/list_changed
// to the client), instructions that say how to turn the switch on, bad
// arguments answered in the tools' own words, and the sandbox's permission
// questions put to the client (ask.go).
package mcpserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// Switch is the project's agent-tools switch (dockerToolsEnabled in
// .pilot/settings.json); *service.Manager is one.
type Switch interface {
	ToolsEnabled(project string) (bool, error)
}

// Options say what the server serves.
type Options struct {
	Project string // the project's canonical path
	Version string // the server's version, as initialize gives it
	Log     zerolog.Logger
	// Poll is how often the settings file is looked at for a flip of the
	// switch (DefaultPoll unless set).
	Poll time.Duration
	// Questions, when set, are the sandbox's permission questions, put to
	// the client (ask.go).
	Questions Questions
}

// DefaultPoll: a flip reaches the client within a quarter of a second, for
// one stat of a small file each time.
const DefaultPoll = 250 * time.Millisecond

// Server is the MCP server of one project.
type Server struct {
	mcp   *mcp.Server
	tools *tools.Set
	sw    Switch
	opts  Options

	notes notes // the questions a tool result names, for a client without elicitation

	sessionsMu sync.Mutex                  // guards sessions
	sessions   map[*mcp.ServerSession]bool // those listening for questions (ask.go)

	mu sync.Mutex // guards on; held while the tools are added or removed, so flips apply in order
	on bool       // whether the tools are registered
}

// New returns the server of the project's tools, as its switch has them.
func New(set *tools.Set, sw Switch, opts Options) *Server {
	if opts.Poll == 0 {
		opts.Poll = DefaultPoll
	}
	s := &Server{tools: set, sw: sw, opts: opts, sessions: map[*mcp.ServerSession]bool{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "pilot-sandbox", Version: opts.Version}, &mcp.ServerOptions{
		// Tools, listChanged even while there are none: the client must
		// know to follow the list from the start. No logging capability:
		// logs go to stderr and the log file.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		Logger:       sdkLogger(opts.Log),
		// The tools are added anew at every flip on: resolve their
		// schemas once.
		SchemaCache:        mcp.NewSchemaCache(),
		InitializedHandler: s.initialized,
	})
	s.mcp.AddReceivingMiddleware(s.middleware)
	s.sync()
	return s
}

// Run serves one client on t until it goes away or ctx ends, following the
// switch meanwhile.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.watch(ctx) })
	err := s.mcp.Run(ctx, t)
	cancel()
	wg.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// sync makes the registered tools follow the switch, and says whether it is
// on. The SDK tells connected clients of a change.
func (s *Server) sync() bool {
	on, err := s.sw.ToolsEnabled(s.opts.Project)
	if err != nil {
		s.opts.Log.Warn().Err(err).Str("project", s.opts.Project).Msg("agent tools switch unreadable; counted as off")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if on == s.on {
		return on
	}
	s.on = on
	if on {
		s.tools.AddTo(s.mcp, s.opts.Project)
	} else {
		s.mcp.RemoveTools(s.tools.Names()...)
	}
	s.opts.Log.Info().Str("project", s.opts.Project).Bool("enabled", on).Msg("agent tools switched")
	return on
}

// middleware answers what the SDK cannot know: the switch's state in the
// instructions, and, for a call, a switch turned off, an unknown tool, or
// arguments the tool refuses, in the tool's own words.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && method != "initialize" {
			s.attach(ss)
		}
		switch method {
		case "initialize", "server/discover":
			res, err := next(ctx, method, req)
			s.instruct(res)
			return res, err
		case "tools/list":
			s.sync()
		case "tools/call":
			if res, err := s.refuse(req.(*mcp.CallToolRequest)); res != nil || err != nil {
				return res, err
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			s.addNotes(res, start)
			return res, err
		}
		return next(ctx, method, req)
	}
}

// addNotes adds to a tool's result the questions asked while it ran, or
// still waiting, for a client that cannot be asked.
func (s *Server) addNotes(res mcp.Result, start time.Time) {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil {
		return
	}
	if text := s.notes.since(start); text != "" {
		r.Content = append(r.Content, &mcp.TextContent{Text: text})
	}
}

func (s *Server) instruct(res mcp.Result) {
	text := instructions(s.opts.Project, s.sync())
	switch r := res.(type) {
	case *mcp.InitializeResult:
		r.Instructions = text
	case *mcp.DiscoverResult:
		r.Instructions = text
	}
}

// refuse answers a call that must not reach its tool; nil, nil lets it go.
func (s *Server) refuse(req *mcp.CallToolRequest) (mcp.Result, error) {
	bad, err := s.tools.CheckArguments(req.Params.Name, req.Params.Arguments)
	if errors.Is(err, tools.ErrUnknownTool) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	if !s.sync() {
		return tools.MCPResult(tools.Errorf(toolsOff(s.opts.Project)))
	}
	if bad != nil {
		return bad, nil
	}
	return nil, nil
}
