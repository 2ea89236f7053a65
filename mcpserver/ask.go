package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pilot-sandbox/pilot-sandbox/permission"
)

// The sandbox sometimes needs what only the user may grant (a network
// destination: docs/protocol.md, "Permission requests"). This server
// carries the project's sandbox while it serves, so its questions are put
// to its client: through MCP elicitation when the client declares it
// (the user answers in the client's own dialog), and otherwise in the
// result of the tool call they came up in, saying what waits and how the
// user answers (pilot-sandbox net allow, which also lets a waiting
// connection through).

// Questions is the permission flow; *permission.Broker is one.
type Questions interface {
	Listen(project string, fn func(permission.Event)) (stop func())
	Answer(id string, a permission.Answer) error
}

// initialized attaches a client that finished the handshake of the
// protocol versions that have one (it declared its capabilities there).
func (s *Server) initialized(_ context.Context, req *mcp.InitializedRequest) {
	s.attach(req.Session)
}

// attach starts listening for the project's questions on behalf of a
// client's session, once, until the session ends: by elicitation when the
// client declared it in its handshake, otherwise for its tool results (a
// client of the stateless protocol versions, which the SDK cannot
// elicit outside a request, gets these too).
func (s *Server) attach(ss *mcp.ServerSession) {
	if s.opts.Questions == nil || ss == nil {
		return
	}
	s.sessionsMu.Lock()
	if s.sessions[ss] {
		s.sessionsMu.Unlock()
		return
	}
	s.sessions[ss] = true
	s.sessionsMu.Unlock()
	hear := s.notes.hear
	if p := ss.InitializeParams(); p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil {
		e := &elicitor{session: ss, questions: s.opts.Questions, project: s.opts.Project, asking: map[string]context.CancelFunc{}}
		hear = e.hear
	}
	stop := s.opts.Questions.Listen(s.opts.Project, hear)
	go func() { // ends with the session
		ss.Wait()
		stop()
		s.sessionsMu.Lock()
		delete(s.sessions, ss)
		s.sessionsMu.Unlock()
	}()
}

// elicitor asks a client that declared elicitation.
type elicitor struct {
	session   *mcp.ServerSession
	questions Questions
	project   string

	mu     sync.Mutex // guards asking
	asking map[string]context.CancelFunc
}

func (e *elicitor) hear(ev permission.Event) {
	switch {
	case ev.Asked != nil:
		q := *ev.Asked
		ctx, cancel := context.WithDeadline(context.Background(), time.UnixMilli(q.ExpiresAt))
		e.mu.Lock()
		e.asking[q.ID] = cancel
		e.mu.Unlock()
		go e.elicit(ctx, q) // ends with the client's answer, the question's end, or its expiry
	case ev.Resolved != nil:
		e.mu.Lock()
		cancel := e.asking[ev.Resolved.ID]
		e.mu.Unlock()
		if cancel != nil {
			cancel() // answered elsewhere: the client's dialog is withdrawn
		}
	}
}

func (e *elicitor) elicit(ctx context.Context, q permission.Question) {
	defer func() {
		e.mu.Lock()
		e.asking[q.ID]()
		delete(e.asking, q.ID)
		e.mu.Unlock()
	}()
	res, err := e.session.Elicit(ctx, &mcp.ElicitParams{Message: elicitMessage(e.project, q), RequestedSchema: answerSchema})
	if err != nil {
		return // withdrawn, expired, or the client failed: the question waits on
	}
	if a, ok := answerOf(res); ok {
		e.questions.Answer(q.ID, a) // a question gone meanwhile keeps its end
	}
}

// answerSchema is the form the user answers: the four decisions, and a
// reason the agent is told.
var answerSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{
			"type": "string", "title": "Your answer",
			"enum":        []string{permission.AllowOnce, permission.AllowSession, permission.AllowAlways, permission.Deny},
			"description": "allow_once: this connection; allow_session: until the sandbox stops; allow_always: kept for this project; deny",
		},
		"reason": map[string]any{"type": "string", "title": "Reason (told to the agent)", "maxLength": 1000},
	},
	"required": []string{"decision"},
}

// answerOf is the user's answer in an elicitation's result; a dismissed
// dialog answers nothing (the question waits for another answer, or its
// expiry), a declined one denies.
func answerOf(res *mcp.ElicitResult) (permission.Answer, bool) {
	switch res.Action {
	case "decline":
		return permission.Answer{Decision: permission.Deny}, true
	case "accept":
		decision, _ := res.Content["decision"].(string)
		reason, _ := res.Content["reason"].(string)
		return permission.Answer{Decision: decision, Reason: reason}, decision != ""
	}
	return permission.Answer{}, false
}

func elicitMessage(project string, q permission.Question) string {
	msg := fmt.Sprintf("The sandbox of %s asks to %s.", project, q.Summary)
	if c := causeText(q.Cause); c != "" {
		msg += " It came from " + c + "."
	}
	return msg + fmt.Sprintf(" Unanswered, it is denied at %s.", time.UnixMilli(q.ExpiresAt).Format("15:04:05"))
}

// causeText says what led to a question: "tool sandbox_exec (request 7)".
func causeText(cause any) string {
	if cause == nil {
		return ""
	}
	data, _ := json.Marshal(cause)
	var fields map[string]string
	if json.Unmarshal(data, &fields) != nil || len(fields) == 0 {
		return ""
	}
	var parts []string
	for _, k := range []string{"tool", "exec", "task", "browser"} {
		if v := fields[k]; v != "" {
			parts = append(parts, k+" "+clipText(v))
		}
	}
	if id := fields["requestId"]; id != "" {
		parts = append(parts, "(request "+clipText(id)+")")
	}
	return strings.Join(parts, " ")
}

func clipText(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// maxNotes bounds the questions kept for tool results.
const maxNotes = 32

// notes are the project's recent questions, for a client that cannot be
// asked: a tool call's result names those asked while it ran and those
// still waiting.
type notes struct {
	mu   sync.Mutex // guards list
	list []note
}

type note struct {
	q        permission.Question
	askedAt  time.Time
	resolved *permission.Resolved
}

func (n *notes) hear(ev permission.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case ev.Asked != nil:
		n.list = append(n.list, note{q: *ev.Asked, askedAt: time.Now()})
		if len(n.list) > maxNotes {
			n.list = n.list[len(n.list)-maxNotes:]
		}
	case ev.Resolved != nil:
		if i := slices.IndexFunc(n.list, func(x note) bool { return x.q.ID == ev.Resolved.ID }); i >= 0 {
			r := *ev.Resolved
			n.list[i].resolved = &r
		}
	}
}

// since is what a tool call that began at start tells its caller, or "".
func (n *notes) since(start time.Time) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var lines []string
	for _, x := range n.list {
		if x.askedAt.Before(start) && x.resolved != nil {
			continue
		}
		state := fmt.Sprintf("waits for the user's answer until %s", time.UnixMilli(x.q.ExpiresAt).Format("15:04:05"))
		if r := x.resolved; r != nil {
			state = strings.TrimSuffix(fmt.Sprintf("%s (%s) %s", r.Decision, r.By, r.Reason), " ")
		}
		line := fmt.Sprintf("- %s: %s", x.q.Summary, state)
		if x.q.Kind == permission.KindNetwork && x.resolved == nil {
			line += fmt.Sprintf("; the user allows it with `pilot-sandbox net allow %s`", x.q.Rule)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return ""
	}
	return "The sandbox asked for the user's permission:\n" + strings.Join(lines, "\n") +
		"\nOnly the user can answer: in the app's sandbox panel, or in a terminal (pilot-sandbox net allow or deny), " +
		"which also lets a waiting connection through. Tell the user what you need and why."
}
