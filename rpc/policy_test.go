package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// pipeClient is a client of a server on an in-memory connection.
type pipeClient struct {
	t       *testing.T
	framing Framing
	conn    net.Conn
	r       *bufio.Reader
}

func servePipe(t *testing.T, framing Framing, svc Service, opts ConnOptions) *pipeClient {
	server, client := net.Pipe()
	s := newTestServer(svc, Info{Name: "pilot-sandbox", Version: "test"}, zerolog.Nop())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(context.Background(), NewStream(framing, server, server, server), opts)
	}()
	t.Cleanup(func() { client.Close(); <-done })
	return &pipeClient{t: t, framing: framing, conn: client, r: bufio.NewReader(client)}
}

func (c *pipeClient) send(id int, method string, params any) {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	frame := append(body, '\n')
	if c.framing == FramingLSP {
		frame = append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...)
	}
	if _, err := c.conn.Write(frame); err != nil {
		c.t.Fatal(err)
	}
}

// reply reads messages until a response, and returns it.
func (c *pipeClient) reply() map[string]any {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		body, err := c.read()
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		var msg map[string]any
		if err := json.Unmarshal(body, &msg); err != nil {
			c.t.Fatalf("%q: %v", body, err)
		}
		if _, ok := msg["id"]; ok {
			return msg
		}
	}
}

func (c *pipeClient) read() ([]byte, error) {
	if c.framing == FramingNDJSON {
		return c.r.ReadBytes('\n')
	}
	header, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(header, "Content-Length:")))
	if err != nil {
		return nil, fmt.Errorf("header %q", header)
	}
	if _, err := c.r.ReadString('\n'); err != nil {
		return nil, err
	}
	body := make([]byte, n)
	_, err = io.ReadFull(c.r, body)
	return body, err
}

func TestRequestsWaitForTheFirstReconciliation(t *testing.T) {
	for _, framing := range []Framing{FramingNDJSON, FramingLSP} {
		t.Run(string(framing), func(t *testing.T) {
			root, _ := filepath.EvalSymlinks(t.TempDir())
			fakeProjects(root)
			fake := newFakeService()
			reconciled := make(chan struct{})
			c := servePipe(t, framing, fake, ConnOptions{Reconciled: reconciled})
			ok := filepath.Join(root, "ok")
			c.send(1, "sandbox/status", map[string]any{"projectPath": ok})
			c.send(2, "sandbox/status", map[string]any{"projectPath": 5})
			c.send(3, "docker/status", map[string]any{})
			// Answered at once: bad params, and what does not depend on
			// the sandboxes found.
			if got := []any{c.reply()["id"], c.reply()["id"]}; !slices.Contains(got, 2.0) || !slices.Contains(got, 3.0) {
				t.Fatalf("answered before reconciliation: ids %v, want 2 and 3", got)
			}
			// What the reconciliation finds is there for the status.
			fake.Start(context.Background(), ok)
			close(reconciled)
			msg := c.reply()
			st, _ := msg["result"].(map[string]any)
			if msg["id"] != 1.0 || st == nil || st["status"] != "running" {
				t.Fatalf("status after reconciliation: %v", msg)
			}
		})
	}
}

func TestTheWaitForReconciliationIsBounded(t *testing.T) {
	defer func(wait time.Duration) { reconcileWait = wait }(reconcileWait)
	reconcileWait = 50 * time.Millisecond
	root, _ := filepath.EvalSymlinks(t.TempDir())
	fakeProjects(root)
	c := servePipe(t, FramingNDJSON, newFakeService(), ConnOptions{Reconciled: make(chan struct{})})
	c.send(1, "sandbox/status", map[string]any{"projectPath": filepath.Join(root, "ok")})
	if msg := c.reply(); msg["error"] != nil || msg["result"] != nil {
		t.Fatalf("status without reconciliation: %v, want null once the wait is over", msg)
	}
}

func TestToolCallsAreUses(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	fakeProjects(root)
	fake := newFakeService()
	ok := filepath.Join(root, "ok")
	fake.SetToolsEnabled(ok, true)
	c := servePipe(t, FramingNDJSON, fake, ConnOptions{})
	c.send(1, "tools/call", map[string]any{"projectPath": ok, "name": "echo", "arguments": map[string]any{"text": "x"}})
	if msg := c.reply(); msg["error"] != nil {
		t.Fatal(msg)
	}
	c.send(2, "tools/call", map[string]any{"projectPath": filepath.Join(root, "other"), "name": "echo", "arguments": map[string]any{"text": "x"}})
	c.reply() // tools off there: refused, and no use
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if !slices.Equal(fake.touched, []string{ok}) {
		t.Errorf("touched %q, want %s once", fake.touched, ok)
	}
}
