package rpc

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// NetworkPolicy is what sandbox/network/policy and sandbox/network/log
// serve (docs/protocol.md, "Network policy"): the policy in force with
// where each part came from, and the connection log, kept in the user's
// state (cmd/pilot-sandbox's network).
type NetworkPolicy interface {
	Policy(project string) (netpolicy.View, error)
	Log(project string, limit int) ([]projectfs.NetLogEntry, error)
	// WatchLog calls fn with each entry the project's log gains until
	// stop.
	WatchLog(project string, fn func(projectfs.NetLogEntry)) (stop func(), err error)
}

// Bounds of sandbox/network/log.
const (
	defaultLogLimit = 100
	maxLogLimit     = 5000
	// maxWatched bounds the projects one connection watches the log of.
	maxWatched = 64
)

// Params and results of sandbox/network/*.
type (
	networkLogParams struct {
		projectParams
		Limit int  `json:"limit,omitzero" jsonschema:"How many of the last entries to answer."`
		Watch bool `json:"watch,omitempty" jsonschema:"Also send each new entry of the project's log as a sandbox/network notification, for as long as this connection lasts."`
	}
	networkLogResult struct {
		Entries []projectfs.NetLogEntry `json:"entries"`
	}
	// networkParams are the params of sandbox/network.
	networkParams struct {
		ProjectPath string                `json:"projectPath"`
		Entry       projectfs.NetLogEntry `json:"entry"`
	}
)

// networkMethods are the rows of the permission and network methods in
// the method table.
func (s *Server) networkMethods() []method {
	return []method{
		typed("sandbox/permission/answer", "Answers a question sandbox/permission asked: allow_once, allow_session (until the sandbox stops), allow_always (kept for the project in the user's state, never in the project) or deny (kept too with always). Everything that waited on the question gets the answer. An unknown or expired id is invalid_params (field id).", s.answerPermission),
		typed("sandbox/permission/list", "The project's questions waiting for an answer, soonest to expire first, and its decisions kept or made for the session.", s.listPermissions),
		typed("sandbox/permission/forget", "Removes the project's kept (and session) decisions for a rule: its next connection is asked again. A rule with no decision is invalid_params (field rule), naming those there are.", s.forgetPermission),
		mayFail(typed("sandbox/network/policy", "The network policy in force for the project, in the order of judgement (fixed denials, deny, allow, ask, the preset; private ranges), each rule with where it came from: config (the user's config.json), repository (the project's .pilot/settings.json), kept, session, preset. While config.json's network cannot be used this is start_failed naming it (data.file), and no sandbox with a network starts.", s.networkPolicy), codeStartFailed, codeProjectFile),
		typed("sandbox/network/log", "The project's last connections, oldest first (from the user's state: it outlives the process that carried them). With watch, each new one also comes as a sandbox/network notification for as long as this connection lasts.", s.networkLog),
	}
}

// TuneSchema bounds limit.
func (networkLogParams) TuneSchema(s *jsonschema.Schema) {
	l := s.Properties["limit"]
	l.Minimum, l.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(maxLogLimit))
	l.Default = json.RawMessage(strconv.Itoa(defaultLogLimit))
}

func (s *Server) networkPolicy(_ context.Context, _ *session, p projectParams) (netpolicy.View, error) {
	return s.svc.NetworkPolicy.Policy(string(p.ProjectPath))
}

func (s *Server) networkLog(_ context.Context, sess *session, p networkLogParams) (networkLogResult, error) {
	limit := p.Limit
	if limit == 0 {
		limit = defaultLogLimit
	}
	entries, err := s.svc.NetworkPolicy.Log(string(p.ProjectPath), limit)
	if err != nil {
		return networkLogResult{}, err
	}
	if entries == nil {
		entries = []projectfs.NetLogEntry{}
	}
	if p.Watch {
		project, err := projectfs.Canonical(string(p.ProjectPath))
		if err != nil {
			return networkLogResult{}, err
		}
		if err := s.watchLog(sess, project); err != nil {
			return networkLogResult{}, err
		}
	}
	return networkLogResult{Entries: entries}, nil
}

// watchLog sends the project's new log entries to the session's client
// until the connection ends; watching it again changes nothing.
func (s *Server) watchLog(sess *session, project string) error {
	sess.watchMu.Lock()
	defer sess.watchMu.Unlock()
	if _, ok := sess.watched[project]; ok {
		return nil
	}
	if len(sess.watched) >= maxWatched {
		return &args.Error{Field: "watch", Reason: "this connection already watches the logs of " + strconv.Itoa(maxWatched) + " projects"}
	}
	stop, err := s.svc.NetworkPolicy.WatchLog(project, func(e projectfs.NetLogEntry) {
		sess.notify(notice{"sandbox/network", networkParams{ProjectPath: project, Entry: e}})
	})
	if err != nil {
		return err
	}
	sess.watched[project] = stop
	return nil
}
