package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// fakeService answers from fixed values and records nothing but what a
// conversation test needs.
type fakeService struct {
	events chan service.Event
	// startGate, when set, holds sandbox/start until it is closed.
	startGate chan struct{}
	mu        sync.Mutex // guards tools
	tools     map[string]bool
}

func newFakeService() *fakeService {
	return &fakeService{events: make(chan service.Event, 16), tools: map[string]bool{}}
}

func (f *fakeService) DockerStatus(context.Context) service.DockerStatus {
	return service.DockerStatus{Available: true, Endpoint: "unix:///fake.sock", Version: "1.0", APIVersion: "1.41"}
}

func (f *fakeService) Start(ctx context.Context, p string) (service.State, error) {
	if f.startGate != nil {
		<-f.startGate
	}
	if _, err := service.CanonicalProject(p); err != nil {
		return service.State{}, err
	}
	return service.State{ProjectPath: p, Status: service.StatusRunning, WSPort: 1, VNCPort: 2}, nil
}

func (f *fakeService) Stop(ctx context.Context, p string) (service.State, error) {
	return service.State{}, service.ErrNoSandbox
}
func (f *fakeService) Remove(ctx context.Context, p string) (bool, error) { return false, nil }
func (f *fakeService) Status(ctx context.Context, p string) (*service.State, error) {
	return nil, nil
}
func (f *fakeService) List(ctx context.Context) ([]service.State, error) { return nil, nil }
func (f *fakeService) Close(ctx context.Context, p string) (*service.State, error) {
	return nil, &service.UnavailableError{Endpoint: "unix:///fake.sock", Err: io.EOF}
}
func (f *fakeService) Exec(ctx context.Context, p string, r service.ExecRequest) (service.ExecOutput, error) {
	return service.ExecOutput{ExitCode: 0, Stdout: r.Command}, nil
}
func (f *fakeService) Screenshot(ctx context.Context, p string) (service.Screenshot, error) {
	return service.Screenshot{}, &service.StartError{Log: []string{"a", "b"}, Err: io.EOF}
}
func (f *fakeService) ToolsEnabled(p string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tools[p], nil
}
func (f *fakeService) SetToolsEnabled(p string, on bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools[p] = on
	return on, nil
}
func (f *fakeService) Subscribe() (<-chan service.Event, func()) { return f.events, func() {} }

// fakeTools has one tool, which echoes its arguments.
type fakeTools struct{}

func (fakeTools) List() []tools.Tool {
	return []tools.Tool{{Name: "echo", Description: "Echoes.", InputSchema: json.RawMessage(`{"type":"object"}`)}}
}

func (fakeTools) Call(ctx context.Context, project, name string, args json.RawMessage) (tools.Result, error) {
	if name != "echo" {
		return tools.Result{}, fmt.Errorf("%w %q", tools.ErrUnknownTool, name)
	}
	return tools.Text(string(args)), nil
}

// client is the test's end of a connection: it writes raw frames and reads
// whole messages.
type client struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	done chan struct{}
	exit chan int
}

func serve(t *testing.T, svc Service) *client {
	t.Helper()
	server, conn := net.Pipe()
	c := &client{t: t, conn: conn, r: bufio.NewReader(conn), done: make(chan struct{}), exit: make(chan int, 1)}
	// The connection may log as it closes after the test ended: no t.Log.
	s := NewServer(svc, fakeTools{}, Info{Name: "pilot-sandbox", Version: "test"}, zerolog.Nop())
	go func() {
		defer close(c.done)
		s.Serve(context.Background(), NewStream(FramingNDJSON, server, server, server), ConnOptions{
			OnExit: func(code int) { c.exit <- code; server.Close() },
		})
	}()
	t.Cleanup(func() { conn.Close(); <-c.done })
	return c
}

func (c *client) send(raw string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.conn, raw+"\n"); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// read returns the next message as a generic object.
func (c *client) read() map[string]any {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("server sent a frame that is not JSON: %q", line)
	}
	return m
}

func errorOf(m map[string]any) (code float64, kind, field string) {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0, "", ""
	}
	data, _ := e["data"].(map[string]any)
	kind, _ = data["kind"].(string)
	field, _ = data["field"].(string)
	return e["code"].(float64), kind, field
}

func TestConversationErrors(t *testing.T) {
	dir := t.TempDir()
	c := serve(t, newFakeService())
	for _, tc := range []struct {
		send  string
		id    any
		code  float64
		kind  string
		field string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}`, 1.0, 0, "", ""},
		{`{not json`, nil, -32700, "parse_error", ""},
		{`[{"jsonrpc":"2.0","id":2,"method":"initialize"}]`, nil, -32600, "invalid_request", ""},
		{`{"jsonrpc":"1.0","id":3,"method":"initialize"}`, 3.0, -32600, "invalid_request", ""},
		{`{"id":4,"method":"initialize"}`, 4.0, -32600, "invalid_request", ""},
		{`{"jsonrpc":"2.0","id":5}`, 5.0, -32600, "invalid_request", ""},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}`, nil, -32600, "invalid_request", ""},
		{`{"jsonrpc":"2.0","id":6,"method":42}`, 6.0, -32600, "invalid_request", ""},
		{`{"jsonrpc":"2.0","id":"seven","method":"no/such"}`, "seven", -32601, "method_not_found", ""},
		{`{"jsonrpc":"2.0","id":8,"method":"sandbox/start","params":{}}`, 8.0, -32602, "invalid_params", "projectPath"},
		{`{"jsonrpc":"2.0","id":9,"method":"sandbox/start","params":{"projectPath":"rel"}}`, 9.0, -32602, "invalid_params", "projectPath"},
		{`{"jsonrpc":"2.0","id":10,"method":"sandbox/start","params":{"projectPath":"` + dir + `","x":1}}`, 10.0, -32602, "invalid_params", "x"},
		{`{"jsonrpc":"2.0","id":11,"method":"sandbox/exec","params":{"projectPath":"` + dir + `","command":"ls","timeoutMs":0}}`, 11.0, -32602, "invalid_params", "timeoutMs"},
		{`{"jsonrpc":"2.0","id":12,"method":"sandbox/stop","params":{"projectPath":"` + dir + `"}}`, 12.0, -32002, "not_running", ""},
		{`{"jsonrpc":"2.0","id":13,"method":"project/close","params":{"projectPath":"` + dir + `"}}`, 13.0, -32001, "docker_unavailable", ""},
		{`{"jsonrpc":"2.0","id":14,"method":"sandbox/screenshot","params":{"projectPath":"` + dir + `"}}`, 14.0, -32004, "start_failed", ""},
		{`{"jsonrpc":"2.0","id":15,"method":"docker/status","params":{"verbose":true}}`, 15.0, -32602, "invalid_params", "verbose"},
		{`{"jsonrpc":"2.0","id":16,"method":"sandbox/list"}`, 16.0, 0, "", ""},
	} {
		c.send(tc.send)
		m := c.read()
		code, kind, field := errorOf(m)
		if m["jsonrpc"] != "2.0" || fmt.Sprint(m["id"]) != fmt.Sprint(tc.id) || code != tc.code || kind != tc.kind || field != tc.field {
			t.Errorf("%s\n  got %v", tc.send, m)
		}
	}
}

func TestNotificationsGetNoAnswer(t *testing.T) {
	c := serve(t, newFakeService())
	c.send(`{"jsonrpc":"2.0","method":"no/such/notification"}`)
	c.send(`{"jsonrpc":"2.0","method":"sandbox/start","params":{"projectPath":"rel"}}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"docker/status"}`)
	if m := c.read(); m["id"] != 1.0 {
		t.Errorf("first answer is %v, want the one to id 1", m)
	}
}

func TestEventsBecomeNotifications(t *testing.T) {
	svc := newFakeService()
	c := serve(t, svc)
	svc.events <- service.Event{Kind: service.EventProgress, Project: "/p", Progress: service.Progress{ProjectPath: "/p", Stage: "image", Message: "Step 1/2", Current: 1, Total: 2}}
	svc.events <- service.Event{Kind: service.EventState, Project: "/p", State: &service.State{ProjectPath: "/p", Status: service.StatusStopped}}
	svc.events <- service.Event{Kind: service.EventState, Project: "/p"}
	progress := c.read()
	if progress["method"] != "sandbox/progress" || progress["params"].(map[string]any)["current"] != 1.0 {
		t.Errorf("progress = %v", progress)
	}
	if ev := c.read(); ev["method"] != "sandbox/event" || ev["params"].(map[string]any)["state"].(map[string]any)["status"] != "stopped" {
		t.Errorf("event = %v", ev)
	}
	if ev := c.read(); ev["params"].(map[string]any)["state"] != nil {
		t.Errorf("removal event = %v, want state null", ev)
	}
}

func TestShutdownThenExit(t *testing.T) {
	c := serve(t, newFakeService())
	c.send(`{"jsonrpc":"2.0","id":1,"method":"shutdown"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"docker/status"}`)
	// Replies may come in any order; match them by id.
	byID := map[float64]map[string]any{}
	for range 2 {
		m := c.read()
		byID[m["id"].(float64)] = m
	}
	if m := byID[1]; m == nil || m["result"] != nil || m["error"] != nil {
		t.Errorf("shutdown answer = %v", m)
	}
	if code, kind, _ := errorOf(byID[2]); code != -32600 || kind != "invalid_request" {
		t.Errorf("after shutdown: %v", byID[2])
	}
	c.send(`{"jsonrpc":"2.0","method":"exit"}`)
	select {
	case code := <-c.exit:
		if code != 0 {
			t.Errorf("exit code %d after shutdown, want 0", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit")
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	c := serve(t, newFakeService())
	c.send(`{"jsonrpc":"2.0","method":"exit"}`)
	select {
	case code := <-c.exit:
		if code != 1 {
			t.Errorf("exit code %d without shutdown, want 1", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit")
	}
}

func TestEndOfInputAnswersPendingRequests(t *testing.T) {
	svc := newFakeService()
	svc.startGate = make(chan struct{})
	dir := t.TempDir()
	server, conn := net.Pipe()
	out := make(chan []byte, 1)
	s := NewServer(svc, fakeTools{}, Info{Name: "x", Version: "y"}, zerolog.Nop())
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"sandbox/start","params":{"projectPath":"` + dir + `"}}` + "\n")
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(context.Background(), NewStream(FramingNDJSON, in, server, nil), ConnOptions{})
		server.Close()
	}()
	go func() { b, _ := io.ReadAll(conn); out <- b }()
	select {
	case <-done:
		t.Fatal("the server ended while a request was still unanswered")
	case <-time.After(200 * time.Millisecond):
	}
	close(svc.startGate)
	<-done
	got := <-out
	if !strings.Contains(string(got), `"id":1`) || !strings.Contains(string(got), `"status":"running"`) {
		t.Errorf("output = %s", got)
	}
}
