package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// exitCodeWait bounds how long Exec waits for the engine to record the exit
// code once the output stream has ended: the two are not ordered.
const exitCodeWait = 2 * time.Second

// Exec runs a command and collects its output. go-dockerclient's exec stream
// ignores its context, so the call is bounded here: on spec.Timeout or a
// cancelled ctx the stream is closed and the call returns, whatever the
// command (or a child still holding its stdout) does.
func (e *Client) Exec(ctx context.Context, id string, spec service.ExecSpec) (service.ExecResult, error) {
	stdout := &cappedBuffer{max: spec.MaxOutput, sink: spec.Stdout}
	stderr := &cappedBuffer{max: spec.MaxOutput, sink: spec.Stderr}
	stdin, cut := inputUntilCut(spec.Stdin)
	tty := spec.Terminal != nil
	execID, stream, err := e.startExec(ctx, id, spec, docker.StartExecOptions{
		InputStream:  stdin,
		OutputStream: stdout,
		ErrorStream:  stderr,
		Tty:          tty,
		RawTerminal:  tty,
	})
	if err != nil {
		cut()
		return service.ExecResult{}, err
	}
	defer e.gates.ended(id, execID)
	if tty {
		defer e.resizes(ctx, execID, spec.Terminal)()
	}
	end, err := waitStream(ctx, stream, spec.Timeout, spec.Finished, cut)
	// The stream's copy goroutine may still be writing after a close.
	res := service.ExecResult{
		Stdout:    stdout.freeze(),
		Stderr:    stderr.freeze(),
		TimedOut:  end == streamTimedOut,
		Truncated: stdout.truncated() || stderr.truncated(),
		ExitCode:  -1,
	}
	if end == streamBroken {
		return res, e.classify(err)
	}
	if err != nil || end == streamFinished {
		// Finished: the caller knows the exit code. The engine may not
		// say it until the streams close: inspecting waits for that.
		return res, err
	}
	res.ExitCode, err = e.exitCode(ctx, execID, end == streamEnded)
	return res, err
}

// startExec creates an exec and starts it with opts, through the
// container's gate (gate.go): a pause of the container waits for it to
// start, and it waits for a pause under way. The caller calls
// e.gates.ended with the exec's ID once the exec is over.
func (e *Client) startExec(ctx context.Context, id string, spec service.ExecSpec, opts docker.StartExecOptions) (string, docker.CloseWaiter, error) {
	if err := e.gates.enter(ctx, id); err != nil {
		return "", nil, err
	}
	api, ex, err := e.createExec(ctx, id, spec, opts.InputStream != nil)
	if err != nil {
		e.gates.sent(id, "")
		return "", nil, err
	}
	stream, err := api.StartExecNonBlocking(ex.ID, opts)
	if err != nil {
		e.gates.sent(id, "")
		return "", nil, e.classify(err)
	}
	e.gates.sent(id, ex.ID)
	return ex.ID, stream, nil
}

// createExec sets up an exec instance with stdout and stderr attached, and
// stdin when asked. It is sent as it is, not through the library's
// CreateExec, which the first time a client makes one asks the engine's
// version again (GET /version: 40 ms of each CLI exec under load) to check
// Env and WorkingDir against it, though connect read it already, and sets
// the client's fields unguarded as it does.
func (e *Client) createExec(ctx context.Context, id string, spec service.ExecSpec, stdin bool) (*docker.Client, *docker.Exec, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	if spec.WorkDir != "" && e.apiBefore(workDirAPI) {
		return nil, nil, fmt.Errorf("docker: a command's working directory needs Docker API %s or later (Docker 17.12)", workDirAPI)
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := e.send(ctx, api, http.MethodPost, "/containers/"+url.PathEscape(id)+"/exec", nil, execConfig{
		Cmd: spec.Cmd, User: spec.User, Env: spec.Env, WorkingDir: spec.WorkDir,
		AttachStdin: stdin, AttachStdout: true, AttachStderr: true, Tty: spec.Terminal != nil,
	})
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var ex docker.Exec
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ex); err != nil || ex.ID == "" {
		return nil, nil, fmt.Errorf("docker: an exec's creation answered no ID (%v)", err)
	}
	return api, &ex, nil
}

// execConfig is the body of POST /containers/{id}/exec.
type execConfig struct {
	Cmd          []string
	User         string   `json:",omitempty"`
	Env          []string `json:",omitempty"`
	WorkingDir   string   `json:",omitempty"`
	AttachStdin  bool
	AttachStdout bool
	AttachStderr bool
	Tty          bool
}

// workDirAPI is the first API version whose exec takes a WorkingDir
// (Docker 17.12); Env came earlier (1.25), before any engine this works
// with.
const workDirAPI = "1.35"

// apiBefore says whether the engine's API version, pinned at connect, is
// older than v.
func (e *Client) apiBefore(v string) bool {
	e.mu.Lock()
	have := e.apiVersion
	e.mu.Unlock()
	got, err1 := docker.NewAPIVersion(have)
	want, err2 := docker.NewAPIVersion(v)
	return err1 == nil && err2 == nil && got.LessThan(want)
}

// resizes gives the exec's terminal each size from sizes until the
// returned stop is called. The engine has no size at create (the API's
// ConsoleSize is newer than go-dockerclient): the first is given right
// after the start, again a few times if the engine does not take it yet,
// as the docker CLI does.
func (e *Client) resizes(ctx context.Context, execID string, sizes <-chan service.TerminalSize) (stop func()) {
	ctx, stop = context.WithCancel(ctx)
	go func() {
		api, err := e.connectShort(ctx)
		if err != nil {
			return
		}
		for first := true; ; first = false {
			select {
			case <-ctx.Done():
				return
			case size := <-sizes:
				for try := 0; try < 10 && api.ResizeExecTTY(execID, size.Height, size.Width) != nil && first; try++ {
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Duration(try+1) * 10 * time.Millisecond):
					}
				}
			}
		}
	}()
	return stop
}

// streamEnd is how waitStream stopped waiting.
type streamEnd int

const (
	streamEnded    streamEnd = iota // the stream closed
	streamFinished                  // the caller said the command is over
	streamTimedOut
	streamCancelled
	streamBroken // the connection under it ended
)

// inputUntilCut is in, passed on until it ends or cut is called (nil for
// none). go-dockerclient's stream waits for its copy of the input to end
// before it says it is over, and the input of a terminal or of a pipe
// left open (exec -i) would hold an exec long after its command ended.
// What reads in may stay blocked in its read after a cut: such an input
// is the process's own, which ends with it.
func inputUntilCut(in io.Reader) (io.Reader, func()) {
	if in == nil {
		return nil, func() {}
	}
	r, w := io.Pipe()
	go func() {
		_, err := io.Copy(w, in)
		w.CloseWithError(err) // nil: EOF for the reader
	}()
	return r, func() { r.Close() }
}

// waitStream waits for the exec stream to end, or for finished to close,
// closing it (and cutting its input) on timeout or when ctx ends.
func waitStream(ctx context.Context, stream docker.CloseWaiter, timeout time.Duration, finished <-chan struct{}, cut func()) (streamEnd, error) {
	done := make(chan error, 1)
	go func() { done <- stream.Wait() }()
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	end := streamEnded
	select {
	case err := <-done:
		if errors.Is(err, errDropped) {
			// The stream broke with its ssh connection: the command
			// may run on. (The library's other errors, such as the
			// input's copy failing once the command has ended, are
			// not the stream's end.)
			return streamBroken, err
		}
		return streamEnded, nil
	case <-finished:
		end = streamFinished
	case <-expire:
		end = streamTimedOut
	case <-ctx.Done():
		end = streamCancelled
	}
	stream.Close()
	cut()
	<-done
	if end == streamCancelled {
		return end, ctx.Err()
	}
	return end, nil
}

// exitCode reads the exec's exit code, waiting (when wait is set) for the
// engine to see the process end; -1 if it has not.
func (e *Client) exitCode(ctx context.Context, execID string, wait bool) (int, error) {
	api, err := e.connectShort(ctx)
	if err != nil {
		return -1, err
	}
	deadline := time.Now().Add(exitCodeWait)
	delay := time.Millisecond
	for {
		info, err := api.InspectExec(execID)
		if err != nil {
			return -1, e.classify(err)
		}
		if !info.Running {
			return info.ExitCode, nil
		}
		if !wait || time.Now().After(deadline) {
			return -1, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// cappedBuffer keeps the first max bytes written to it (all of them when max
// is 0) and counts the rest; with a sink, it passes everything on to it
// instead. After freeze it drops every write, because the library's copy
// goroutine can outlive a closed stream.
type cappedBuffer struct {
	max  int
	sink io.Writer

	mu      sync.Mutex // guards the fields below, and the sink's writes
	buf     []byte
	dropped int64
	frozen  bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.frozen {
		return len(p), nil
	}
	if b.sink != nil {
		return b.sink.Write(p)
	}
	keep := len(p)
	if b.max > 0 && len(b.buf)+keep > b.max {
		keep = max(b.max-len(b.buf), 0)
	}
	b.buf = append(b.buf, p[:keep]...)
	b.dropped += int64(len(p) - keep)
	return len(p), nil
}

func (b *cappedBuffer) freeze() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.frozen = true
	return b.buf
}

func (b *cappedBuffer) truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped > 0
}

// String is what was kept so far.
func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
