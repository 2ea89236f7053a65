package tools

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
)

// Recorder is where a Set records each call: the sandbox's timeline
// (docs/activity.md); *activity.Recorder is one.
type Recorder interface {
	Add(ctx context.Context, project string, e activity.Entry) error
}

// Record makes the Set record every call in r, with thumbnails of the
// screen before and after each acting tool.
func Record(r Recorder) Option { return func(s *Set) { s.jobs.rec = r } }

// Bounds of a call's summary: its arguments and its answer in short.
const (
	maxArgsSummary   = 200
	maxResultSummary = 300
)

// recording starts the record of a call: it returns the context the call
// runs in (where act leaves its thumbnails) and what records its result.
// A record that cannot be written is lost, never a reason to fail the call.
func (js *jobs) recording(ctx context.Context, project, name string, a any) (context.Context, func(Result)) {
	if js.rec == nil {
		return ctx, func(Result) {}
	}
	start := time.Now()
	sh := &shots{}
	ctx = context.WithValue(ctx, shotsKey{}, sh)
	return ctx, func(res Result) {
		before, after := sh.taken()
		kind := activity.KindTool
		if name == "sandbox_exec" {
			kind = activity.KindExec
		}
		js.rec.Add(context.WithoutCancel(ctx), project, activity.Entry{
			Kind: kind, Name: name, Summary: summary(a, res), DurationMs: time.Since(start).Milliseconds(),
			IsError: res.IsError, Before: before, After: after,
		})
	}
}

// summary is a call's arguments and the start of its answer's text.
func summary(a any, res Result) string {
	args, _ := json.Marshal(a)
	text := ""
	for _, c := range res.Content {
		if c.Type == "text" {
			text = c.Text
			break
		}
	}
	return activity.Cut(string(args), maxArgsSummary) + " → " + activity.Cut(text, maxResultSummary)
}

// shots are the thumbnails an acting tool took; a call that went on in
// the background may still be taking them when its record is written.
type shots struct {
	mu            sync.Mutex // guards before and after
	before, after []byte
}

type shotsKey struct{}

func (s *shots) taken() ([]byte, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.before, s.after
}

// thumbnail takes a thumbnail of the screen for the call's record, if it
// is recorded: before the action, or after it.
func thumbnail(ctx context.Context, d Desktop, after bool) {
	sh, ok := ctx.Value(shotsKey{}).(*shots)
	if !ok {
		return
	}
	shot, err := d.Screenshot(ctx)
	if err != nil {
		return
	}
	jpg, err := activity.Thumbnail(shot.PNG)
	if err != nil {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if after {
		sh.after = jpg
	} else {
		sh.before = jpg
	}
}
