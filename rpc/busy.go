package rpc

import (
	"context"
	"fmt"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// A client's calls that act on one sandbox through the engine (an exec, a
// kill, a file, a screenshot, a tool) each make engine calls: 150 kills
// sent at once ran at once, and the engine gave way (72.7 s, 94 of them
// timed out). So a connection runs at most MaxSandboxCalls of them on one
// sandbox at a time, and answers one past that at once, -32015 busy
// (docs/protocol.md, Limits): the client retries when one of its calls has
// ended. Other clients, and other sandboxes, are not held up.

// MaxSandboxCalls bounds the calls one connection has running on one
// sandbox.
const MaxSandboxCalls = 16

// sandboxCalls counts a connection's calls running on each sandbox, by
// projectPath as the client wrote it.
type sandboxCalls struct {
	mu      sync.Mutex // guards running
	running map[string]int
}

// enter counts a call on project in, unless MaxSandboxCalls run there.
func (c *sandboxCalls) enter(project string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[project] >= MaxSandboxCalls {
		return false
	}
	if c.running == nil {
		c.running = map[string]int{}
	}
	c.running[project]++
	return true
}

func (c *sandboxCalls) leave(project string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[project]--; c.running[project] <= 0 {
		delete(c.running, project)
	}
}

// busyWire is the answer to a call refused because its connection runs
// MaxSandboxCalls on the sandbox already: busy, with data.limit.
func busyWire(project string) *jsonrpc2.Error {
	return newError(codeBusy, fmt.Sprintf("this client already has %d calls running on the sandbox of %s: this one was not run; "+
		"send it again when one of them has ended", MaxSandboxCalls, project), &errorData{Limit: MaxSandboxCalls})
}

// onSandbox is what the params of a method that acts on one sandbox say
// of it (projectParams has it).
type onSandbox interface{ sandbox() string }

func (p projectParams) sandbox() string { return string(p.ProjectPath) }

// perSandbox bounds m, a method acting on one sandbox through the engine,
// by MaxSandboxCalls per connection and sandbox.
func perSandbox(m method) method {
	run := m.run
	m.run = func(ctx context.Context, sess *session, p any) (any, error) {
		on, ok := p.(onSandbox)
		if !ok {
			return run(ctx, sess, p)
		}
		project := on.sandbox()
		if !sess.sandboxCalls.enter(project) {
			return nil, busyWire(project)
		}
		defer sess.sandboxCalls.leave(project)
		return run(ctx, sess, p)
	}
	m.errors = append(m.errors, codeBusy)
	return m
}
