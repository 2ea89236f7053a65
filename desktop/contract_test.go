package desktop

// The protocol between the sidecar and the desktop agent is written down
// once, in resources/agent/testdata/contract.json: the exchanges of one
// agent's life, each request as the sidecar sends it and the agent's answer.
// resources/agent/test_contract.py checks the agent's end under a real X
// server; this checks the sidecar's: each exchange's Go call must send
// exactly the recorded request, and the recorded response must come back
// from the call as the values below.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

type agentContract struct {
	About     []string        `json:"about"`
	Display   Display         `json:"display"`
	Exchanges []agentExchange `json:"exchanges"`
}

type agentExchange struct {
	Name     string          `json:"name"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
	Vary     []string        `json:"vary"`
}

type clipboardRead struct {
	Text  string
	Empty bool
}

// contractCase is an exchange's Go call, returning what its caller gets:
// the call's values (nil when it returns only an error) and its error. want
// is what the values must be given the recorded response; the error, if the
// response holds one, is checked against the response itself.
type contractCase struct {
	call func() (any, error)
	want any
}

// contractCalls are the Go calls of the exchanges, by name.
func contractCalls(ctx context.Context, d *Desktop, shots map[string]Screenshot) map[string]contractCase {
	clipboard := func() (any, error) {
		text, empty, err := d.Clipboard(ctx)
		return clipboardRead{text, empty}, err
	}
	return map[string]contractCase{
		// The first request of every agent, sent when the sidecar starts it.
		"hello": {call: func() (any, error) {
			_, err := d.conn.Agent(ctx)
			return nil, err
		}},
		"move":           {call: func() (any, error) { return nil, d.Move(ctx, 10, 20) }},
		"click":          {call: func() (any, error) { return nil, d.Click(ctx, 30, 40, 3, 2) }},
		"click_defaults": {call: func() (any, error) { return nil, d.Click(ctx, 7, 8, 0, 0) }},
		"drag": {call: func() (any, error) {
			return nil, d.Drag(ctx, Drag{Path: []image.Point{{10, 20}, {200, 120}}})
		}},
		"scroll":              {call: func() (any, error) { return nil, d.Scroll(ctx, 50, 60, "down", 5) }},
		"type":                {call: func() (any, error) { return nil, d.Type(ctx, "héllo ✓\n") }},
		"key":                 {call: func() (any, error) { return nil, d.Keys(ctx, "ctrl+a BackSpace") }},
		"clipboard_get_empty": {call: clipboard, want: clipboardRead{Text: "", Empty: true}},
		"clipboard_set":       {call: func() (any, error) { return nil, d.SetClipboard(ctx, "héllo <中文> & co\n") }},
		"clipboard_get":       {call: clipboard, want: clipboardRead{Text: "héllo <中文> & co\n", Empty: false}},
		"screenshot":          {call: func() (any, error) { return d.Screenshot(ctx) }, want: shots["screenshot"]},
		"key_unknown":         {call: func() (any, error) { return nil, d.Keys(ctx, "ctrl+bogus") }},
		"key_malformed":       {call: func() (any, error) { return nil, d.Keys(ctx, "ctrl+") }},
		"scroll_direction":    {call: func() (any, error) { return nil, d.Scroll(ctx, 1, 2, "sideways", 1) }},
		// An operation the agent lacks: how an agent older than the sidecar
		// would refuse a new one.
		"unknown_op": {call: func() (any, error) {
			_, err := d.call(ctx, request{Op: "warp"}, requestTimeout)
			return nil, err
		}},
		"move_after_errors": {call: func() (any, error) { return nil, d.Move(ctx, 0, 0) }},
		// Added since the first agent.
		"pointer":         {call: func() (any, error) { return d.Pointer(ctx) }, want: image.Pt(0, 0)},
		"click_modifiers": {call: func() (any, error) { return nil, d.Click(ctx, 5, 6, 1, 3, "ctrl", "shift") }},
		"drag_path": {call: func() (any, error) {
			path := []image.Point{{10, 20}, {50, 20}, {50, 80}, {200, 120}}
			return nil, d.Drag(ctx, Drag{Path: path, Duration: 50 * time.Millisecond, Modifiers: []string{"shift"}})
		}},
		"pointer_after_drag": {call: func() (any, error) { return d.Pointer(ctx) }, want: image.Pt(200, 120)},
		"scroll_modifiers":   {call: func() (any, error) { return nil, d.Scroll(ctx, 50, 60, "up", 1, "ctrl") }},
		"key_hold":           {call: func() (any, error) { return nil, d.HoldKeys(ctx, "shift", 100*time.Millisecond) }},
		"screenshot_region": {call: func() (any, error) { return d.ScreenshotRegion(ctx, image.Rect(300, 180, 320, 200)) },
			want: shots["screenshot_region"]},
		"click_modifier_unknown": {call: func() (any, error) { return nil, d.Click(ctx, 1, 2, 1, 1, "hyper") }},
		"key_hold_two":           {call: func() (any, error) { return nil, d.HoldKeys(ctx, "a b", 100*time.Millisecond) }},
		"screenshot_region_off": {call: func() (any, error) {
			_, err := d.ScreenshotRegion(ctx, image.Rect(310, 190, 330, 210))
			return nil, err
		}},
		// Perception, on a screen with no window and no accessibility bus.
		"tree_empty": {call: func() (any, error) { return d.Tree(ctx) }, want: Tree{Nodes: []Node{}}},
		"locate_unknown": {call: func() (any, error) {
			_, err := d.Locate(ctx, "e1")
			return nil, err
		}},
		"focus_unknown": {call: func() (any, error) {
			_, err := d.Focus(ctx, "e2")
			return nil, err
		}},
		"type_unknown_ref": {call: func() (any, error) { return nil, d.TypeInto(ctx, "e3", "abc") }},
		"mark":             {call: func() (any, error) { return nil, d.Mark(ctx) }},
		"settle_unchanged": {call: func() (any, error) {
			return d.Settle(ctx, 50*time.Millisecond, 20*time.Millisecond, 200*time.Millisecond)
		}, want: Change{Still: true}},
		"still": {call: func() (any, error) { return d.Still(ctx, 50*time.Millisecond, 500*time.Millisecond) },
			want: Stillness{Still: true, Took: 50 * time.Millisecond}},
	}
}

func TestAgentContractSidecarEnd(t *testing.T) {
	contract := loadAgentContract(t)
	session := &contractSession{t: t, exchanges: contract.Exchanges}
	session.out, session.in = io.Pipe()
	t.Cleanup(func() { session.Close() })
	conn := &contractConn{session: session}
	d := New(conn, contract.Display)

	calls := contractCalls(context.Background(), d, contractScreenshots(t, contract))
	for _, ex := range contract.Exchanges {
		c, ok := calls[ex.Name]
		if !ok {
			t.Fatalf("exchange %s: no Go call for it in contractCalls", ex.Name)
		}
		delete(calls, ex.Name)
		got, err := c.call()
		checkContractError(t, ex, err)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: the call returned %+v, want %+v", ex.Name, got, c.want)
		}
	}
	for name := range calls {
		t.Errorf("contractCalls has %s, which the contract does not", name)
	}
	if n := session.sent(); n != len(contract.Exchanges) {
		t.Errorf("the sidecar sent %d requests, the contract has %d", n, len(contract.Exchanges))
	}
	if conn.dialed != 1 {
		t.Errorf("%d agents started, want 1", conn.dialed)
	}
	// The Python side of the contract runs the agent the same way: its
	// source, then its modules as NAME=SOURCE (agent.py, MODULES).
	want := []string{"python3", "-I", "-u", "-c", "# the agent"}
	for _, m := range resources.DesktopAgentModules() {
		want = append(want, m.Name+"="+string(m.Source))
	}
	if got := Command([]byte("# the agent")); !slices.Equal(got, want) {
		t.Errorf("the agent runs as %.200q, want %.200q", got, want)
	}
}

// checkContractError: a response with an error must come back as ErrAgent
// with the agent's words; any other response, as no error.
func checkContractError(t *testing.T, ex agentExchange, err error) {
	t.Helper()
	var resp struct {
		Error *string `json:"error"`
	}
	if jerr := json.Unmarshal(ex.Response, &resp); jerr != nil {
		t.Fatalf("%s: response: %v", ex.Name, jerr)
	}
	switch {
	case resp.Error == nil && err != nil:
		t.Errorf("%s: %v", ex.Name, err)
	case resp.Error != nil && (!errors.Is(err, ErrAgent) || err.Error() != ErrAgent.Error()+": "+*resp.Error):
		t.Errorf("%s: error %v, want ErrAgent saying %q", ex.Name, err, *resp.Error)
	}
}

// contractScreenshots are what the screenshot calls must return for the
// recorded screenshots, by exchange: each PNG's bytes, at the size the
// response gives.
func contractScreenshots(t *testing.T, c agentContract) map[string]Screenshot {
	shots := map[string]Screenshot{}
	for _, ex := range c.Exchanges {
		var resp struct {
			PNG    *string `json:"png"`
			Width  int     `json:"width"`
			Height int     `json:"height"`
		}
		if err := json.Unmarshal(ex.Response, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.PNG == nil {
			continue
		}
		png, err := base64.StdEncoding.DecodeString(*resp.PNG)
		if err != nil {
			t.Fatalf("%s: png: %v", ex.Name, err)
		}
		shots[ex.Name] = Screenshot{PNG: png, Width: resp.Width, Height: resp.Height}
	}
	if shots["screenshot"].Width != c.Display.Width || shots["screenshot"].Height != c.Display.Height {
		t.Fatalf("the contract's screenshot is %+v, not of its %+v display", shots["screenshot"], c.Display)
	}
	return shots
}

func loadAgentContract(t *testing.T) agentContract {
	t.Helper()
	// Found from the module's root, wherever this file's package lives.
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	data, err := os.ReadFile(filepath.Join(dir, "resources", "agent", "testdata", "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c agentContract
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("contract.json: %v", err)
	}
	return c
}

// contractConn starts the one agent of the test, whose session plays the
// agent's end of the contract.
type contractConn struct {
	session *contractSession
	agent   *Agent
	dialed  int
}

func (c *contractConn) Agent(ctx context.Context) (*Agent, error) {
	if c.agent != nil {
		return c.agent, nil
	}
	c.dialed++
	a, err := Dial(ctx, c.session)
	c.agent = a
	return a, err
}

func (c *contractConn) Explain(_ context.Context, err error) error { return err }

// contractSession is an agent that answers each request with the next
// recorded response, after checking the request is the recorded one.
type contractSession struct {
	t         *testing.T
	exchanges []agentExchange
	out       *io.PipeReader // what the agent writes
	in        *io.PipeWriter

	mu   sync.Mutex // guards next
	next int
}

func (s *contractSession) Write(p []byte) (int, error) {
	s.mu.Lock()
	i := s.next
	s.next++
	s.mu.Unlock()
	if i >= len(s.exchanges) {
		s.t.Errorf("a request past the contract's end: %s", p)
		return 0, errors.New("past the contract's end")
	}
	ex := s.exchanges[i]
	if bytes.IndexByte(p, '\n') != len(p)-1 {
		s.t.Errorf("%s: a request is not one line: %q", ex.Name, p)
	}
	if !sameJSON(s.t, p, ex.Request) {
		s.t.Errorf("%s: the sidecar sent\n\t%s\nthe contract has\n\t%s", ex.Name, bytes.TrimSpace(p), ex.Request)
	}
	answer, err := contractAnswer(ex.Response)
	if err != nil {
		s.t.Errorf("%s: response: %v", ex.Name, err)
		return 0, err
	}
	if _, err := s.in.Write(answer); err != nil {
		return 0, err
	}
	return len(p), nil
}

// contractAnswer is a recorded response as the agent writes it
// (agent.py, encode): its PNG, which the file holds in base64, as a frame
// before the line.
func contractAnswer(response json.RawMessage) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(response, &members); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if b64, ok := members["png"]; ok {
		var png []byte // encoding/json decodes base64 into []byte
		if err := json.Unmarshal(b64, &png); err != nil {
			return nil, err
		}
		fmt.Fprintf(&out, "=%d\n%s", len(png), png)
		delete(members, "png")
	}
	line, err := json.Marshal(members)
	out.Write(append(line, '\n'))
	return out.Bytes(), err
}

func (s *contractSession) Read(p []byte) (int, error) { return s.out.Read(p) }

func (s *contractSession) Close() error {
	s.in.Close()
	return nil
}

func (s *contractSession) Stderr() string { return "" }

func (s *contractSession) sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// sameJSON: the same JSON value, members in any order; numbers compare as
// written, so 1 and 1.0 differ.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(data []byte) any {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}
