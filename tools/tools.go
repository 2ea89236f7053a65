package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Sandbox is what the tools need of the sidecar; *service.Manager is one
// (through New).
type Sandbox interface {
	Start(ctx context.Context, project string) (service.State, error)
	Stop(ctx context.Context, project string) (service.State, error)
	Exec(ctx context.Context, project string, req service.ExecRequest) (service.ExecOutput, error)
	// ExecArgv runs a program in the sandbox without a shell, as
	// *service.Manager does; sandbox_exec writes its full output with it.
	ExecArgv(ctx context.Context, project string, spec service.ExecSpec) (service.ExecResult, error)
	Desktop(ctx context.Context, project string) (Desktop, error)
}

// Desktop drives a running sandbox's display in display pixels;
// *desktop.Desktop is one.
type Desktop interface {
	Display() desktop.Display
	Pointer(ctx context.Context) (image.Point, error)
	Move(ctx context.Context, x, y int) error
	Click(ctx context.Context, x, y, button, count int, modifiers ...string) error
	Drag(ctx context.Context, g desktop.Drag) error
	Scroll(ctx context.Context, x, y int, direction string, amount int, modifiers ...string) error
	Type(ctx context.Context, text string) error
	TypeInto(ctx context.Context, ref, text string) error
	Keys(ctx context.Context, keys string) error
	HoldKeys(ctx context.Context, combo string, hold time.Duration) error
	Screenshot(ctx context.Context) (desktop.Screenshot, error)
	ScreenshotRegion(ctx context.Context, r image.Rectangle) (desktop.Screenshot, error)
	Clipboard(ctx context.Context) (string, bool, error)
	SetClipboard(ctx context.Context, text string) error
	// Perception (desktop/perception.go).
	Tree(ctx context.Context) (desktop.Tree, error)
	Locate(ctx context.Context, ref string) (desktop.Element, error)
	Focus(ctx context.Context, ref string) (desktop.Element, error)
	Mark(ctx context.Context) error
	Settle(ctx context.Context, wait, quiet, longest time.Duration) (desktop.Change, error)
	Still(ctx context.Context, quiet, timeout time.Duration) (desktop.Stillness, error)
}

// Limits of the tools' arguments. The schemas and descriptions state them
// from here.
const (
	MaxTextLength = 100000
	MaxWait       = 30
)

// New returns the agent tools, run on the manager's sandboxes.
func New(m *service.Manager, opts ...Option) *Set { return newSet(managerSandbox{m}, opts...) }

// For returns the agent tools run on sb (a fake, in tests of a server).
func For(sb Sandbox, opts ...Option) *Set { return newSet(sb, opts...) }

// managerSandbox adapts the manager to Sandbox.
type managerSandbox struct{ *service.Manager }

func (s managerSandbox) Desktop(ctx context.Context, project string) (Desktop, error) {
	return s.Manager.Desktop(ctx, project)
}

func definitions(sb Sandbox, js *jobs) []tool {
	return []tool{
		leftClickTool(sb),
		clickTool(sb, "sandbox_double_click", "Double-click (left button)", 1, 2),
		clickTool(sb, "sandbox_right_click", "Right-click", 3, 1),
		clickTool(sb, "sandbox_middle_click", "Middle-click", 2, 1),
		hoverTool(sb),
		dragTool(sb),
		scrollTool(sb),
		typeTool(sb),
		keyTool(sb),
		screenshotTool(sb),
		clipboardGetTool(sb),
		clipboardSetTool(sb),
		startTool(sb),
		stopTool(sb),
		waitTool(sb, js),
		execTool(sb),
	}
}

// typedTool is a tool whose arguments are the struct A: its input schema
// and the strict decoding of a call's arguments come from A (package
// args), and an MCP server registers it as A (mcp.AddTool[A]).
type typedTool[A any] struct {
	name, desc string
	spec       *args.Spec[A]
	run        func(ctx context.Context, project string, a A) (Result, error)
	joinable   bool                 // a call joins the project's call of this tool still going
	hints      *mcp.ToolAnnotations // what it does to the sandbox (hints.go)
}

// define is a tool from its arguments struct and a function of the
// decoded arguments, with what it does to the sandbox (hints.go).
func define[A any](name, desc string, hints *mcp.ToolAnnotations, run func(ctx context.Context, project string, a A) (Result, error)) typedTool[A] {
	return typedTool[A]{name: name, desc: desc, spec: args.For[A](), run: run, hints: hints}
}

func (t typedTool[A]) info() Tool {
	return Tool{Name: t.name, Description: t.desc, InputSchema: t.spec.Schema(), Annotations: t.hints}
}

// call runs the tool; bad arguments and sandbox failures become error
// results.
func (t typedTool[A]) call(ctx context.Context, js *jobs, project string, raw json.RawMessage) Result {
	a, err := t.spec.Decode(raw)
	if err != nil {
		return failure(err)
	}
	return t.bounded(ctx, js, project, a)
}

// check decodes a call's arguments as call does, and says what is wrong.
func (t typedTool[A]) check(raw json.RawMessage) error {
	_, err := t.spec.Decode(raw)
	return err
}

// bounded runs the tool on decoded arguments within the answer bound.
// Each call is recorded on the sandbox's timeline (record.go).
func (t typedTool[A]) bounded(ctx context.Context, js *jobs, project string, a A) Result {
	ctx, record := js.recording(ctx, project, t.name, a)
	res := js.run(ctx, project, t.name, t.joinable, func(ctx context.Context) Result {
		if js.refused(project, t.name) {
			return userHasControl()
		}
		res, err := t.run(ctx, project, a)
		if err != nil {
			return failure(err)
		}
		return res
	})
	record(res)
	return res
}

// noArgs are the arguments of a tool that takes none.
type noArgs struct{}

// failure tells the model what went wrong and what to do about it.
func failure(err error) Result {
	var ae *args.Error
	switch {
	case errors.As(err, &ae):
		return Errorf("Invalid arguments: " + explain(ae) + ".")
	case errors.Is(err, service.ErrPaused):
		return Errorf("The sandbox is paused: every process in it is frozen, its windows kept as they were. Resume it with sandbox_start, then take a screenshot.")
	case errors.Is(err, service.ErrNotRunning):
		return Errorf("The sandbox is not running. Start it with sandbox_start, then take a screenshot.")
	case errors.Is(err, service.ErrDockerUnavailable):
		return Errorf("Docker is not available, so the sandbox cannot run. Tell the user: " + err.Error())
	case errors.Is(err, service.ErrNeedsApproval):
		// Only the user may approve: no tool does, so the model is told
		// to ask rather than to work around it.
		return Errorf("The sandbox cannot start until the user approves what the project's files ask: " + err.Error() +
			". Tell the user; only they can approve it (the Sandbox panel's Approve button, or pilot-sandbox approve).")
	case errors.Is(err, service.ErrAgent):
		return Errorf(strings.TrimPrefix(err.Error(), service.ErrAgent.Error()+": ") + ".")
	case errors.Is(err, context.Canceled):
		return Errorf("The call was cancelled.")
	default:
		return Errorf("The tool failed: " + err.Error())
	}
}

// explain says what is wrong with an argument, as a model reads it: a
// required one left out comes with its description.
func explain(e *args.Error) string {
	name := e.Field
	if name == "" {
		name = "arguments"
	}
	msg := fmt.Sprintf("argument %q %s", name, e.Reason)
	if e.Description != "" {
		msg += ": " + strings.TrimSuffix(e.Description, ".")
	}
	return msg
}

// argError is a bad argument, as a model reads it.
func argError(field, reason string) error { return &args.Error{Field: field, Reason: reason} }
