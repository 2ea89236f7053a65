package mcpserver

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// newAsking is a served project whose server puts the broker's questions
// to its client.
func newAsking(t *testing.T) (*served, *permission.Broker) {
	t.Helper()
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	flip(t, project, true)
	broker := permission.New(projectfs.NewDecisions(t.TempDir()))
	fake := newFake()
	set := tools.For(fake)
	t.Cleanup(set.Close)
	server := New(set, fileSwitch{}, Options{Project: project, Version: "test", Log: zerolog.Nop(), Poll: 5 * time.Millisecond, Questions: broker})
	return &served{fake: fake, set: set, server: server, project: project}, broker
}

func question(project, host string) permission.Request {
	return permission.Request{Project: project, Kind: permission.KindNetwork, Rule: host + ":443",
		Summary: "connect to " + host + ":443 (tcp) from `curl https://" + host + "`",
		Cause:   map[string]string{"tool": "sandbox_exec", "requestId": "7"}, Timeout: time.Minute}
}

// askWhenHeard asks once the client's session listens (its handshake
// ends before the server hears it has).
func askWhenHeard(t *testing.T, b *permission.Broker, r permission.Request) <-chan permission.Answer {
	t.Helper()
	out := make(chan permission.Answer, 1)
	eventually(t, "the client's session to listen", func() bool {
		probe := r
		probe.Rule = "probe.invalid:1"
		probe.Timeout = time.Millisecond
		return b.Ask(context.Background(), probe).Reason != permission.ReasonNoOne
	})
	go func() { out <- b.Ask(context.Background(), r) }()
	return out
}

// A client that declares elicitation is asked in its own dialog: the
// message says what, for what and until when; its answer is the user's.
func TestQuestionsByElicitation(t *testing.T) {
	s, broker := newAsking(t)
	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	withdrawn := make(chan struct{})
	answers := map[string]*mcp.ElicitResult{
		"example.org":      {Action: "accept", Content: map[string]any{"decision": "allow_session"}},
		"tracker.example":  {Action: "accept", Content: map[string]any{"decision": "deny", "reason": "a tracker"}},
		"declined.example": {Action: "decline"},
	}
	s.client(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req.Params)
		mu.Unlock()
		for host, res := range answers {
			if strings.Contains(req.Params.Message, "connect to "+host+":") {
				return res, nil
			}
		}
		<-ctx.Done() // a question answered elsewhere: the dialog is withdrawn
		if strings.Contains(req.Params.Message, "elsewhere.example") {
			close(withdrawn)
		}
		return nil, ctx.Err()
	}}, "2025-11-25") // the handshake's versions: the SDK elicits outside a request only there
	if a := <-askWhenHeard(t, broker, question(s.project, "example.org")); a.Decision != permission.AllowSession || a.By != permission.ByUser {
		t.Errorf("answer = %+v", a)
	}
	if a := broker.Ask(context.Background(), question(s.project, "tracker.example")); a.Allowed() || a.Reason != "a tracker" {
		t.Errorf("answer = %+v", a)
	}
	if a := broker.Ask(context.Background(), question(s.project, "declined.example")); a.Allowed() || a.By != permission.ByUser {
		t.Errorf("a declined dialog: %+v", a)
	}
	mu.Lock()
	var first *mcp.ElicitParams
	for _, p := range asked {
		if strings.Contains(p.Message, "example.org") {
			first = p
		}
	}
	mu.Unlock()
	for _, want := range []string{"The sandbox of " + s.project + " asks to connect to example.org:443 (tcp) from `curl https://example.org`.",
		"It came from tool sandbox_exec (request 7).", "Unanswered, it is denied at"} {
		if !strings.Contains(first.Message, want) {
			t.Errorf("message %q lacks %q", first.Message, want)
		}
	}
	// Answered elsewhere (the panel): the client's dialog is withdrawn.
	waiting := make(chan permission.Answer, 1)
	go func() { waiting <- broker.Ask(context.Background(), question(s.project, "elsewhere.example")) }()
	var id string
	eventually(t, "the question to wait", func() bool {
		p, _ := broker.List(s.project)
		if len(p) == 1 {
			id = p[0].ID
		}
		return id != ""
	})
	// Any dialog, not the last: askWhenHeard's probes (expired at once)
	// may reach the client after it under load.
	eventually(t, "the dialog to open", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(asked, func(p *mcp.ElicitParams) bool { return strings.Contains(p.Message, "elsewhere.example") })
	})
	broker.Answer(id, permission.Answer{Decision: permission.AllowOnce})
	if a := <-waiting; a.Decision != permission.AllowOnce {
		t.Errorf("answer = %+v", a)
	}
	select {
	case <-withdrawn:
	case <-time.After(10 * time.Second):
		t.Error("the client's dialog of a question answered elsewhere was not withdrawn")
	}
}

// A client without elicitation learns in the result of the tool call
// that was running what waits for the user and how the user answers.
func TestQuestionsInTheToolResult(t *testing.T) {
	s, broker := newAsking(t)
	cs := s.client(t, nil, "")
	s.fake.hold = make(chan struct{})
	result := make(chan *mcp.CallToolResult, 1)
	go func() { result <- callTool(t, cs, "sandbox_start", map[string]any{}) }()
	answer := askWhenHeard(t, broker, question(s.project, "example.org"))
	eventually(t, "the question to wait", func() bool { p, _ := broker.List(s.project); return len(p) == 1 })
	close(s.fake.hold)
	text := textOf(t, <-result)
	for _, want := range []string{"The sandbox asked for the user's permission:",
		"- connect to example.org:443 (tcp) from `curl https://example.org`: waits for the user's answer until",
		"the user allows it with `pilot-sandbox net allow example.org:443`"} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "probe.invalid") {
		t.Errorf("a question answered before the call is named:\n%s", text)
	}
	pending, _ := broker.List(s.project)
	broker.Answer(pending[0].ID, permission.Answer{Decision: permission.Deny})
	<-answer
	if text := textOf(t, callTool(t, cs, "sandbox_wait", map[string]any{"seconds": 0})); strings.Contains(text, "permission") {
		t.Errorf("a later call names a question answered before it:\n%s", text)
	}
}
