package service

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// The desktop agent (resources/agent/agent.py) runs in the sandbox as its
// user, in one long-lived exec per container, and answers one JSON line per
// request. Talking to it costs a write and a read on an open stream, where
// every docker exec costs tens of milliseconds before the command even runs.

// maxAgentLine bounds one answer of the agent (a screenshot of a large
// display is the largest).
const maxAgentLine = 256 << 20

// ErrAgent marks a request the desktop agent refused or failed; the message
// says why in words a model can act on (an unknown key name, say).
var ErrAgent = errors.New("desktop agent")

// agentRequest is one request; the agent reads the fields its op needs.
type agentRequest struct {
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	X         int    `json:"x"`
	Y         int    `json:"y"`
	ToX       int    `json:"toX"`
	ToY       int    `json:"toY"`
	Button    int    `json:"button,omitempty"`
	Count     int    `json:"count,omitempty"`
	Direction string `json:"direction,omitempty"`
	Amount    int    `json:"amount,omitempty"`
	Text      string `json:"text"`
	Keys      string `json:"keys,omitempty"`
}

type agentResponse struct {
	ID     int64  `json:"id"`
	Error  string `json:"error"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	PNG    []byte `json:"png"` // base64 in JSON
	Text   string `json:"text"`
	Empty  bool   `json:"empty"`
	Typed  int    `json:"typed"`
}

// agent is a running desktop agent.
type agent struct {
	containerID string
	session     ExecSession
	lines       chan []byte   // answers, in order
	done        chan struct{} // closed when the agent's output ends

	mu     sync.Mutex // serializes requests; guards next
	next   int64
	closed bool
}

// startAgent starts the agent in a running container and checks it answers.
func (m *Manager) startAgent(ctx context.Context, containerID string) (*agent, error) {
	if len(m.cfg.Agent) == 0 {
		return nil, errors.New("no desktop agent is configured")
	}
	session, err := m.docker.ExecAttach(ctx, containerID, ExecSpec{
		// -I: ignore the environment and user site; -u: unbuffered.
		Cmd:  []string{"python3", "-I", "-u", "-c", string(m.cfg.Agent)},
		User: sandboxUser,
		Env:  []string{displayEnv},
	})
	if err != nil {
		return nil, fmt.Errorf("start desktop agent: %w", err)
	}
	a := &agent{containerID: containerID, session: session, lines: make(chan []byte), done: make(chan struct{})}
	go a.read()
	if _, err := a.call(ctx, agentRequest{Op: "hello"}, 30*time.Second); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// read passes each line of the agent's output on until it ends.
func (a *agent) read() {
	defer close(a.done)
	sc := bufio.NewScanner(a.session)
	sc.Buffer(make([]byte, 64<<10), maxAgentLine)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		select {
		case a.lines <- line:
		case <-a.done: // never: done is closed only here
		}
	}
}

// call sends one request and waits for its answer. A request that times out
// or is cancelled ends the agent: its state is unknown, and the next call
// starts a fresh one.
func (a *agent) call(ctx context.Context, req agentRequest, timeout time.Duration) (agentResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return agentResponse{}, errAgentGone
	}
	a.next++
	req.ID = a.next
	data, err := json.Marshal(req)
	if err != nil {
		return agentResponse{}, err
	}
	if _, err := a.session.Write(append(data, '\n')); err != nil {
		a.closeLocked()
		return agentResponse{}, fmt.Errorf("%w: %v", errAgentGone, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line := <-a.lines:
			var resp agentResponse
			if err := json.Unmarshal(line, &resp); err != nil {
				a.closeLocked()
				return resp, fmt.Errorf("desktop agent answered %q: %v", truncateString(string(line), 200), err)
			}
			if resp.ID != req.ID {
				continue // the answer to an earlier request: cannot happen, but harmless
			}
			if resp.Error != "" {
				return resp, fmt.Errorf("%w: %s", ErrAgent, resp.Error)
			}
			return resp, nil
		case <-a.done:
			a.closeLocked()
			return agentResponse{}, fmt.Errorf("%w: %s", errAgentGone, strings.TrimSpace(a.session.Stderr()))
		case <-timer.C:
			a.closeLocked()
			return agentResponse{}, fmt.Errorf("%w: the desktop agent did not answer %s within %s", ErrTimeout, req.Op, timeout)
		case <-ctx.Done():
			a.closeLocked()
			return agentResponse{}, ctx.Err()
		}
	}
}

// errAgentGone: the agent's process ended (its container stopped, or it
// crashed); the next call starts a new one.
var errAgentGone = errors.New("the desktop agent exited")

func (a *agent) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closeLocked()
}

func (a *agent) closeLocked() {
	if !a.closed {
		a.closed = true
		a.session.Close()
	}
}

func (a *agent) alive() bool {
	select {
	case <-a.done:
		return false
	default:
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.closed
}

// agentFor returns the project's agent for the container, starting one if
// there is none or the last one ended.
func (m *Manager) agentFor(ctx context.Context, b *box, containerID string) (*agent, error) {
	b.agentMu.Lock()
	defer b.agentMu.Unlock()
	if b.agent != nil && b.agent.containerID == containerID && b.agent.alive() {
		return b.agent, nil
	}
	if b.agent != nil {
		b.agent.close()
	}
	a, err := m.startAgent(ctx, containerID)
	if err != nil {
		return nil, err
	}
	b.agent = a
	return a, nil
}

func truncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
