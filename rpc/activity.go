package rpc

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/recording"
)

// Activity is the sandboxes' timelines (docs/activity.md):
// *activity.Recorder is one.
type Activity interface {
	Add(ctx context.Context, project string, e activity.Entry) error
	// Listen hears every new entry, this process's and others', until
	// stop.
	Listen(fn func(activity.Entry)) (stop func())
	Log() *activity.Log
}

// maxActivityEntries bounds one answer of sandbox/activity: thumbnails
// included, at most some 100 × 40 KiB.
const maxActivityEntries = 100

// Params and results of sandbox/activity.
type (
	activityParams struct {
		projectParams
		Since int64 `json:"since,omitzero" jsonschema:"Only the entries with a seq above this, oldest first; left out, the newest."`
		Limit int   `json:"limit,omitzero" jsonschema:"How many entries at most."`
		From  int64 `json:"from,omitzero" jsonschema:"Only the entries at or after this time (Unix milliseconds), oldest first."`
		To    int64 `json:"to,omitzero" jsonschema:"Only the entries at or before this time (Unix milliseconds)."`
		Brief bool  `json:"brief,omitzero" jsonschema:"Leave out the thumbnails (a recording's marks need only times and names)."`
	}
	activityResult struct {
		Entries []activity.Entry `json:"entries"`
	}
)

// TuneSchema bounds since and limit.
func (activityParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["since"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["from"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["to"].Minimum = jsonschema.Ptr(0.0)
	bound(s.Properties["limit"], 1, maxActivityEntries)
	s.Properties["limit"].Default = json.RawMessage("100")
}

func bound(p *jsonschema.Schema, min, max float64) { p.Minimum, p.Maximum = &min, &max }

func (s *Server) readActivity(_ context.Context, _ *session, p activityParams) (activityResult, error) {
	limit := p.Limit
	if limit == 0 {
		limit = maxActivityEntries
	}
	if p.To > 0 && p.To < p.From {
		return activityResult{}, &args.Error{Field: "to", Reason: "is before from"}
	}
	windowed := p.From > 0 || p.To > 0
	read := limit
	if windowed {
		read = 0 // the window picks first, the limit after
	}
	entries, err := s.svc.Activity.Log().Read(canonical(string(p.ProjectPath)), p.Since, read)
	if windowed {
		entries = slices.DeleteFunc(entries, func(e activity.Entry) bool {
			return e.Time < p.From || (p.To > 0 && e.Time > p.To)
		})
		entries = entries[:min(len(entries), limit)]
	}
	if p.Brief {
		for i := range entries {
			entries[i].Before, entries[i].After = nil, nil
		}
	}
	if entries == nil {
		entries = []activity.Entry{}
	}
	return activityResult{Entries: entries}, err
}

func canonical(project string) string {
	if c, err := projectfs.Canonical(project); err == nil {
		return c
	}
	return project
}

// listenActivity makes the connection hear every new entry as
// sandbox/activity; it returns the end of that.
func (s *Server) listenActivity(sess *session) (stop func()) {
	if s.svc.Activity == nil {
		return func() {}
	}
	return s.svc.Activity.Listen(func(e activity.Entry) { sess.notify(notice{"sandbox/activity", e}) })
}

// projected params name a project.
type projected interface{ project() string }

func (p projectParams) project() string { return string(p.ProjectPath) }

// summarized params and results say themselves in short on a timeline;
// others say nothing there (a start's params are its project).
type summarized interface{ activitySummary() string }

func summaryOf(v any) string {
	if s, ok := v.(summarized); ok {
		return activity.Cut(s.activitySummary(), 300)
	}
	return ""
}

// An exec says its command, never its stdin or environment (a secret may
// be in them).
func (p execParams) activitySummary() string { return p.Command }

func (a execAnswer) activitySummary() string {
	if a.started != nil {
		return fmt.Sprintf("started in the background, pid %d", a.started.PID)
	}
	if a.ended.TimedOut {
		return "timed out"
	}
	return fmt.Sprintf("exit %d", a.ended.ExitCode)
}

// recorded makes a method that acts on a sandbox leave an entry of kind
// on its timeline when it ends: the app's starts, stops, pauses and execs.
func (s *Server) recorded(kind string, m method) method {
	run := m.run
	m.run = func(ctx context.Context, sess *session, p any) (any, error) {
		start := time.Now()
		res, err := run(ctx, sess, p)
		if pp, ok := p.(projected); ok && s.svc.Activity != nil {
			summary := summaryOf(p)
			if err != nil {
				summary += " → " + err.Error()
			} else if r := summaryOf(res); r != "" {
				summary += " → " + r
			}
			s.svc.Activity.Add(context.WithoutCancel(ctx), canonical(pp.project()), activity.Entry{
				Kind: kind, Name: m.name, Summary: summary, DurationMs: time.Since(start).Milliseconds(), IsError: err != nil,
			})
		}
		return res, err
	}
	return m
}

// exportParams are sandbox/activity/export's.
type exportParams struct {
	projectParams
	Dir  string `json:"dir,omitzero" jsonschema:"An absolute path of a new folder to write into (its parent must exist); left out, a new folder under the user's state directory."`
	From int64  `json:"from,omitzero" jsonschema:"Only what happened at or after this time (Unix milliseconds)."`
	To   int64  `json:"to,omitzero" jsonschema:"Only what happened at or before this time (Unix milliseconds)."`
}

// TuneSchema bounds the window.
func (exportParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["from"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["to"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["dir"].MaxLength = jsonschema.Ptr(4096)
}

// exportActivity writes the project's session (docs/activity.md, Export):
// its timeline of the window with the thumbnails as files, and the
// recordings of that time that have ended.
func (s *Server) exportActivity(_ context.Context, _ *session, p exportParams) (activity.Exported, error) {
	if p.To > 0 && p.To < p.From {
		return activity.Exported{}, &args.Error{Field: "to", Reason: "is before from"}
	}
	project := canonical(string(p.ProjectPath))
	log := s.svc.Activity.Log()
	dir := cmp.Or(p.Dir, log.ExportDir(project, time.Now()))
	if p.Dir == "" {
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return activity.Exported{}, err
		}
	}
	w := activity.Window{From: p.From, To: p.To}
	var videos []string
	if s.svc.Recordings != nil {
		recs, err := s.svc.Recordings.List(project)
		if err != nil {
			return activity.Exported{}, err
		}
		for _, r := range recs {
			if r.State != recording.StateRecording && w.Overlaps(r.StartedAt, r.EndedAt) {
				videos = append(videos, r.Path)
			}
		}
	}
	return log.Export(project, dir, w, videos)
}
