package mcpserver

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// The MCP server's tools are the JSON-RPC server's: one source of names,
// descriptions and schemas.
func TestToolsAreTheJSONRPCServers(t *testing.T) {
	s := newServed(t, true)
	cs := s.client(t, nil, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type described struct {
		Name, Description string
		InputSchema       json.RawMessage
	}
	var got, want []described
	for _, tl := range res.Tools {
		schema, _ := json.Marshal(tl.InputSchema)
		got = append(got, described{tl.Name, tl.Description, schema})
	}
	for _, tl := range s.set.List() {
		schema, _ := json.Marshal(tl.InputSchema)
		want = append(want, described{tl.Name, tl.Description, schema})
	}
	byName := func(a, b described) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(got, byName)
	slices.SortFunc(want, byName)
	if len(got) != 16 {
		t.Errorf("%d tools, want 16", len(got))
	}
	for i := range min(len(got), len(want)) {
		if g, w := got[i], want[i]; g.Name != w.Name || g.Description != w.Description || !sameJSON(g.InputSchema, w.InputSchema) {
			t.Errorf("MCP has\n  %s: %s %s\nJSON-RPC has\n  %s: %s %s", g.Name, g.Description, g.InputSchema, w.Name, w.Description, w.InputSchema)
		}
	}
}

// sameJSON: the client reads a schema into a map, which loses the order of
// its members, and nothing else.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// A bad argument answers the same text over MCP as over JSON-RPC, with
// isError, whatever the SDK's validation would have said.
func TestBadArgumentsAnswerInTheToolsWords(t *testing.T) {
	s := newServed(t, true)
	cs := s.client(t, nil, "")
	callTool(t, cs, "sandbox_start", map[string]any{})
	for _, tc := range []struct{ tool, args string }{
		{"sandbox_click", `{"x": -1, "y": 2}`},
		{"sandbox_click", `{"x": 1.5, "y": 2}`},
		{"sandbox_click", `{"x": 99, "y": 2}`},
		{"sandbox_click", `{"y": 2}`},
		{"sandbox_drag", `{"startX": 1, "startY": 1, "endX": 1, "endY": 1, "speed": 2}`},
		{"sandbox_scroll", `{"x": 1, "y": 1, "direction": "up", "amount": 0}`},
		{"sandbox_type", `{"text": 5}`},
		{"sandbox_exec", `{"command": "ls", "timeoutSeconds": 601}`},
		{"sandbox_wait", `{"seconds": "5"}`},
		{"sandbox_screenshot", `{"x": 1}`},
	} {
		res := callTool(t, cs, tc.tool, json.RawMessage(tc.args))
		want, err := s.set.Call(context.Background(), s.project, tc.tool, json.RawMessage(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		got := textOf(t, res)
		if !res.IsError || got != want.Content[0].Text || !strings.HasPrefix(got, "Invalid arguments: argument ") {
			t.Errorf("%s %s:\n  MCP      %q (isError %v)\n  JSON-RPC %q", tc.tool, tc.args, got, res.IsError, want.Content[0].Text)
		}
	}
	if calls := s.fake.Calls(); !slices.Equal(calls, []string{"start"}) {
		t.Errorf("bad arguments reached the sandbox: %v", calls)
	}
}

// The SDK's client speaks the newest revision (server/discover, then a
// subscription for list changes); an older one uses initialize. Either
// hears a flip of the switch by another process.
func TestListChangedReachesEveryRevision(t *testing.T) {
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		t.Run("version="+version, func(t *testing.T) {
			s := newServed(t, false)
			changed := make(chan struct{}, 10)
			cs := s.client(t, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				changed <- struct{}{}
			}}, version)
			want := version
			if want == "" {
				want = mcp.SupportedProtocolVersions()[0]
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("negotiated %s, want %s", got, want)
			}
			if !strings.Contains(cs.InitializeResult().Instructions, "--enable-tools") {
				t.Errorf("instructions while off: %q", cs.InitializeResult().Instructions)
			}
			for _, on := range []bool{true, false, true} {
				flip(t, s.project, on)
				select {
				case <-changed:
				case <-time.After(10 * time.Second):
					t.Fatalf("switch %v: no notifications/tools/list_changed after 10s", on)
				}
				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if n := map[bool]int{true: 16, false: 0}[on]; len(res.Tools) != n {
					t.Errorf("switch %v: %d tools, want %d", on, len(res.Tools), n)
				}
			}
		})
	}
}

func TestCancelledCallStopsTheWork(t *testing.T) {
	s := newServed(t, true)
	s.fake.hold = make(chan struct{})
	cs := s.client(t, nil, "")
	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan error)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbox_start", Arguments: map[string]any{}})
		answered <- err
	}()
	eventually(t, "the start to begin", func() bool { return slices.Contains(s.fake.Calls(), "start") })
	cancel()
	if err := <-answered; err == nil {
		t.Error("the cancelled call answered without an error")
	}
	select {
	case <-s.fake.cancelled: // notifications/cancelled reached the start
	case <-time.After(10 * time.Second):
		t.Fatal("the start went on after its call was cancelled")
	}
}

func TestProgressGoesToTheCallerThatAskedForIt(t *testing.T) {
	s := newServed(t, true)
	var mu sync.Mutex
	var got []string
	cs := s.client(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, req.Params.ProgressToken.(string)+": "+req.Params.Message)
	}}, "")
	callTool(t, cs, "sandbox_start", map[string]any{}) // no token: no progress
	params := &mcp.CallToolParams{Name: "sandbox_start", Arguments: map[string]any{}}
	params.SetProgressToken("tok")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	want := []string{"tok: building the sandbox image (a first start takes a few minutes): Step 1/2 : FROM debian", "tok: The desktop is ready"}
	eventually(t, "the progress", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("progress %q, want %q", got, want)
	}
}

// A start past the answer bound says it goes on; sandbox_wait gives its
// result.
func TestLongStartAnswersWithinTheBound(t *testing.T) {
	s := newServed(t, true, tools.Bound(20*time.Millisecond))
	s.fake.hold = make(chan struct{})
	cs := s.client(t, nil, "")
	if got := textOf(t, callTool(t, cs, "sandbox_start", map[string]any{})); !strings.HasPrefix(got, "sandbox_start is still running after 0 seconds (now building the sandbox image") {
		t.Errorf("start: %q", got)
	}
	close(s.fake.hold)
	// Ask until the start has ended (each wait of 0 s answers at once).
	for {
		got := textOf(t, callTool(t, cs, "sandbox_wait", map[string]any{"seconds": 0}))
		if strings.HasPrefix(got, "sandbox_start has ended:\nThe sandbox is running") {
			break
		}
		if !strings.HasPrefix(got, "sandbox_start is still running") {
			t.Fatalf("wait: %q", got)
		}
	}
}

// eventually polls cond until it holds, and fails the test if it never
// does.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not so after 10s", what)
		}
	}
}
