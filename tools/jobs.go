package tools

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// AnswerBound is how long a tool call takes at most to answer. Common MCP
// hosts drop a tool's result after 60 s, and the desktop app's agent has
// the same patience: a call still running then (a first start that builds
// the image, a long command) goes on in the background, and its answer says
// so; sandbox_wait, or sandbox_start again, waits for it.
const AnswerBound = 45 * time.Second

// maxUnreported bounds the finished background calls a project keeps for
// sandbox_wait to report: a model that never asks must not make the
// process grow.
const maxUnreported = 8

// A job is one run of a tool, in a goroutine of its own so that the call
// can answer before it ends.
type job struct {
	owner   *jobs
	project string
	tool    string
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{} // closed once res is set
	res     Result

	// Guarded by owner.mu.
	waiters  map[*waiter]struct{} // calls waiting for its result
	detached bool                 // a call answered that it goes on in the background
	reported bool                 // a call answered with its result
	note     string               // what it is doing, from its latest progress
}

// A waiter is one call waiting for a job, and where that call's progress
// goes (nil: nowhere).
type waiter struct {
	mu       sync.Mutex // guards gone; held while progress is sent
	gone     bool       // the call has answered: no progress after its answer
	progress func(service.Progress)
}

// jobs runs a Set's tool calls within the answer bound and keeps the ones
// others may ask for: running starts (a second start joins them), and calls
// whose answer said they go on, until sandbox_wait reports them.
type jobs struct {
	bound time.Duration // 0: a call waits for its end
	rec   Recorder      // where each call is recorded (record.go); nil: nowhere
	gate  Gate          // who holds the desktops (control.go); nil: the agent always
	wg    sync.WaitGroup

	mu   sync.Mutex // guards kept, closed and the jobs' guarded fields
	kept []*job
	all  map[*job]struct{} // every running job, for Close
	shut bool
}

func newJobs(bound time.Duration) *jobs {
	return &jobs{bound: bound, all: map[*job]struct{}{}}
}

// run runs f for a call and answers with its result, or, past the bound,
// with a result saying that it goes on. A joinable tool's call joins a run
// of the same tool for the project that is still going. The call's
// cancellation cancels the run, unless another call waits for it or it was
// already left to run on in the background.
func (js *jobs) run(ctx context.Context, project, tool string, joinable bool, f func(context.Context) Result) Result {
	j, w := js.enter(ctx, project, tool, joinable, f)
	if j == nil {
		return Errorf("The sidecar is shutting down; try again once it is back.")
	}
	return js.await(ctx, j, w)
}

func (js *jobs) enter(ctx context.Context, project, tool string, joinable bool, f func(context.Context) Result) (*job, *waiter) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.shut {
		return nil, nil
	}
	var j *job
	if joinable {
		j = js.running(project, tool)
	}
	if j == nil {
		j = js.launch(ctx, project, tool, f)
		if joinable {
			js.kept = append(js.kept, j)
		}
	}
	w := &waiter{progress: progressFunc(ctx)}
	j.waiters[w] = struct{}{}
	return j, w
}

// running is the project's unfinished run of tool. js.mu must be held.
func (js *jobs) running(project, tool string) *job {
	for _, j := range js.kept {
		if j.project == project && j.tool == tool && !j.finished() {
			return j
		}
	}
	return nil
}

// launch starts f in its own goroutine, under a context that keeps ctx's
// values but not its end: the job may outlive the call. js.mu must be held.
func (js *jobs) launch(ctx context.Context, project, tool string, f func(context.Context) Result) *job {
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	j := &job{owner: js, project: project, tool: tool, started: time.Now(), cancel: cancel,
		done: make(chan struct{}), waiters: map[*waiter]struct{}{}}
	jctx = context.WithValue(jctx, jobKey{}, j)
	js.all[j] = struct{}{}
	js.wg.Go(func() {
		j.res = f(jctx)
		cancel()
		close(j.done)
		js.ended(j)
	})
	return j
}

// ended forgets a job that ended, unless its result is still owed to a
// model that was told it goes on.
func (js *jobs) ended(j *job) {
	js.mu.Lock()
	defer js.mu.Unlock()
	delete(js.all, j)
	if j.reported || !j.detached {
		js.drop(j)
		return
	}
	var owed []*job
	for _, k := range js.kept {
		if k.project == j.project && k.finished() {
			owed = append(owed, k)
		}
	}
	for _, k := range owed[:max(0, len(owed)-maxUnreported)] {
		js.drop(k)
	}
}

// drop forgets a kept job. js.mu must be held.
func (js *jobs) drop(j *job) {
	js.kept = slices.DeleteFunc(js.kept, func(k *job) bool { return k == j })
}

func (j *job) finished() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// await waits for the job's result within the bound.
func (js *jobs) await(ctx context.Context, j *job, w *waiter) Result {
	var expired <-chan time.Time
	if js.bound > 0 {
		t := time.NewTimer(js.bound)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-j.done:
		return js.collect(j, w)
	case <-expired:
		if j.finished() {
			return js.collect(j, w)
		}
		return js.detach(j, w)
	case <-ctx.Done():
		js.leave(j, w, true)
		return failure(ctx.Err())
	}
}

// collect hands the job's result to a call.
func (js *jobs) collect(j *job, w *waiter) Result {
	js.leave(j, w, false)
	js.mu.Lock()
	j.reported = true
	js.drop(j)
	js.mu.Unlock()
	return j.res
}

// detach leaves the job to run on in the background, kept for
// sandbox_wait, and tells the call so.
func (js *jobs) detach(j *job, w *waiter) Result {
	js.leave(j, w, false)
	js.mu.Lock()
	j.detached = true
	if !slices.Contains(js.kept, j) {
		js.kept = append(js.kept, j)
	}
	note := j.note
	js.mu.Unlock()
	return stillRunning(j, note, js.bound)
}

// leave takes a call off the job's waiters, after any progress being sent
// to it. The last call cancelled off a job nobody was told goes on stops
// it.
func (js *jobs) leave(j *job, w *waiter, cancelled bool) {
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	js.mu.Lock()
	defer js.mu.Unlock()
	delete(j.waiters, w)
	if cancelled && len(j.waiters) == 0 && !j.detached {
		j.cancel()
		js.drop(j)
	}
}

// pending are the project's kept jobs: running starts, and calls that were
// left to run on, finished or not.
func (js *jobs) pending(project string) []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	var out []*job
	for _, j := range js.kept {
		if j.project == project {
			out = append(out, j)
		}
	}
	return out
}

// waitFor waits until every pending job has ended, or until expired, and
// reports each: the result of one that ended, or how long it has run.
func (js *jobs) waitFor(ctx context.Context, pending []*job, expired <-chan time.Time) (Result, error) {
wait:
	for _, j := range pending {
		select {
		case <-j.done:
		case <-expired:
			break wait
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	var out Result
	for _, j := range pending {
		if !j.finished() {
			js.mu.Lock()
			note := j.note
			js.mu.Unlock()
			if note != "" {
				note = ", now " + note
			}
			out.Content = append(out.Content, Content{Type: "text", Text: fmt.Sprintf(
				"%s is still running (for %d seconds%s). Call sandbox_wait again to wait for it.",
				j.tool, int(time.Since(j.started).Seconds()), note)})
			continue
		}
		res := js.take(j)
		out.Content = append(out.Content, Content{Type: "text", Text: j.tool + " has ended:"})
		out.Content = append(out.Content, res.Content...)
		out.IsError = out.IsError || res.IsError
	}
	return out, nil
}

// take marks a finished job's result as given to a model.
func (js *jobs) take(j *job) Result {
	js.mu.Lock()
	defer js.mu.Unlock()
	j.reported = true
	js.drop(j)
	return j.res
}

// close cancels every job and waits for them to end; later calls are
// refused.
func (js *jobs) close() {
	js.mu.Lock()
	js.shut = true
	for j := range js.all {
		j.cancel()
	}
	js.mu.Unlock()
	js.wg.Wait()
}

// report records a job's progress and passes it to the calls waiting for
// it.
func (j *job) report(p service.Progress) {
	js := j.owner
	js.mu.Lock()
	j.note = describeProgress(p)
	waiters := make([]*waiter, 0, len(j.waiters))
	for w := range j.waiters {
		waiters = append(waiters, w)
	}
	js.mu.Unlock()
	for _, w := range waiters {
		w.send(p)
	}
}

func (w *waiter) send(p service.Progress) {
	if w.progress == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.gone {
		w.progress(p)
	}
}

// describeProgress says what a start is doing, as a model reads it.
func describeProgress(p service.Progress) string {
	if p.Stage != service.StageImage {
		return p.Message
	}
	const what = "building the sandbox image (a first start takes a few minutes)"
	if p.Total > 0 {
		return fmt.Sprintf("%s, step %d of %d: %s", what, p.Current, p.Total, p.Message)
	}
	return what + ": " + p.Message
}

// stillRunning is the answer of a call left to run on in the background.
func stillRunning(j *job, note string, after time.Duration) Result {
	msg := fmt.Sprintf("%s is still running after %d seconds", j.tool, int(after.Seconds()))
	if note != "" {
		msg += " (now " + note + ")"
	}
	msg += fmt.Sprintf(". It goes on in the background: call sandbox_wait (up to %d seconds) to wait for its result", MaxWait)
	if j.tool == "sandbox_start" {
		msg += ", or sandbox_start again, which waits for this start"
	}
	return Text(msg + ".")
}

type jobKey struct{}

// reportProgress passes a tool's progress to its job, if it runs in one.
func reportProgress(ctx context.Context, p service.Progress) {
	if j, ok := ctx.Value(jobKey{}).(*job); ok {
		j.report(p)
	}
}

type progressKey struct{}

// WithProgress returns a context whose tool calls send their progress to f
// while they wait (an MCP server's progress notifications). f is called
// from one goroutine at a time, and never after the call has answered.
func WithProgress(ctx context.Context, f func(service.Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

func progressFunc(ctx context.Context) func(service.Progress) {
	f, _ := ctx.Value(progressKey{}).(func(service.Progress))
	return f
}
