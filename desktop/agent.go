package desktop

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

// The desktop agent (resources/agent/agent.py) runs in the sandbox as its
// user, in one long-lived exec per run of the container, and answers one
// JSON line per request; a screenshot's PNG comes before its line as a
// frame of raw bytes (lines.go, readAnswer). Talking to it costs a write and a read on an open
// stream, where every docker exec costs tens of milliseconds before the
// command even runs.

// What the agent writes is read no further than the answer the sidecar
// waits for can be: whatever runs in the sandbox can write into the agent's
// output too (/proc/<pid>/fd/1 of a process of the same user).
const (
	// maxAnswer bounds a line while no request is waiting, and the answer
	// to every request but the two below: a few numbers, or an error's words.
	maxAnswer = 1 << 20
	// maxClipboardAnswer bounds the answer to clipboard_get: its text,
	// JSON-escaped (up to 12 bytes for a character), is the largest part.
	maxClipboardAnswer = 16 << 20
	// maxTreeAnswer bounds the answer to tree: a few thousand nodes of a
	// few hundred bytes each (perception.py reads at most 3,000 objects of
	// a program and 5,000 of a page), names JSON-escaped.
	maxTreeAnswer = 8 << 20
)

// ErrAgent marks a request the desktop agent refused or failed; the message
// says why in words a model can act on (an unknown key name, say).
var ErrAgent = errors.New("desktop agent")

// ErrGone: the agent's process ended (its container stopped, or it
// crashed); the next request needs a new one.
var ErrGone = errors.New("the desktop agent exited")

// ErrTooLong: the agent's output held a line longer than any answer to
// the request could be. The agent is closed unread: something in the
// sandbox may be writing into its output.
var ErrTooLong = errors.New("the desktop agent wrote a line longer than any answer")

// ErrBadScreenshot: the agent's screenshot is not a PNG of the display.
var ErrBadScreenshot = errors.New("the desktop agent's screenshot is not of the display")

// ErrTimeout: the agent did not answer in time. The agent is closed, as its
// state is unknown.
var ErrTimeout = errors.New("the desktop agent did not answer in time")

// Session is the agent's process as an attached exec gives it: its stdin
// and stdout, and what it wrote to stderr so far.
type Session interface {
	io.Reader
	io.Writer
	Close() error
	Stderr() string
}

// Command is the argv that runs the agent from its source: -I ignores the
// environment and the user's site packages, -u leaves output unbuffered.
// Its own modules follow as NAME=SOURCE arguments, which the agent
// installs before it imports them (agent.py, install_modules): a -c
// program has no directory to import from, and the modules then always
// match the agent, whatever image the container was made from.
func Command(source []byte) []string {
	argv := []string{"python3", "-I", "-u", "-c", string(source)}
	for _, m := range resources.DesktopAgentModules() {
		argv = append(argv, m.Name+"="+string(m.Source))
	}
	return argv
}

// request is one request; the agent reads the fields its op needs.
type request struct {
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	X         int    `json:"x"`
	Y         int    `json:"y"`
	ToX       int    `json:"toX"`
	ToY       int    `json:"toY"`
	Button    int    `json:"button,omitempty"`
	Count     int    `json:"count,omitempty"`
	Direction string `json:"direction,omitempty"`
	Amount    int    `json:"amount,omitempty"`
	Text      string `json:"text"`
	Keys      string `json:"keys,omitempty"`
	// Added since the first agent, so left out when unused: an exchange
	// that does not need them is what it always was.
	Modifiers  []string `json:"modifiers,omitempty"`
	Path       [][2]int `json:"path,omitempty"`
	DurationMs int64    `json:"durationMs,omitempty"`
	HoldMs     int64    `json:"holdMs,omitempty"`
	Width      int      `json:"width,omitempty"`
	Height     int      `json:"height,omitempty"`
	// Perception (perception.go).
	Ref       string `json:"ref,omitempty"`
	WaitMs    int64  `json:"waitMs,omitempty"`
	QuietMs   int64  `json:"quietMs,omitempty"`
	LongestMs int64  `json:"longestMs,omitempty"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`

	// maxAnswer bounds the answer's line; 0 means the package's maxAnswer.
	maxAnswer int `json:"-"`
}

type response struct {
	ID     int64  `json:"id"`
	Error  string `json:"error"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	PNG    []byte `json:"-"` // the frame before the line
	Text   string `json:"text"`
	Empty  bool   `json:"empty"`
	Typed  int    `json:"typed"`
	// Perception (perception.go).
	Role    string  `json:"role"`
	Name    string  `json:"name"`
	Nodes   []Node  `json:"nodes"`
	Omitted Omitted `json:"omitted"`
	Content int     `json:"content"`
	Changed bool    `json:"changed"`
	Box     []int   `json:"box"`
	Ms      int64   `json:"ms"`
	Still   bool    `json:"still"`
}

// Agent is a running desktop agent.
type Agent struct {
	session      Session
	closeSession func()        // closes session once, from Close or from read
	answers      chan answer   // in order
	done         chan struct{} // closed when the agent's output ends
	stop         chan struct{} // closed by Close: read gives up a line no one waits for
	limit        atomic.Int64  // the longest line read takes now
	readErr      error         // why read ended early; written before done is closed

	mu     sync.Mutex // serializes requests; guards next
	next   int64
	closed bool
}

// Dial checks that the agent on the session answers, and returns it. The
// session is closed when the agent does not answer.
func Dial(ctx context.Context, session Session) (*Agent, error) {
	a := &Agent{session: session, answers: make(chan answer), done: make(chan struct{}), stop: make(chan struct{})}
	a.closeSession = sync.OnceFunc(func() { session.Close() })
	a.limit.Store(maxAnswer)
	go a.read()
	if _, err := a.call(ctx, request{Op: "hello"}, 30*time.Second); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// read passes each answer of the agent's output on until it ends, which
// Close brings about by closing the session. A line or frame longer than
// the answer awaited ends it too, and closes the session rather than read
// on.
func (a *Agent) read() {
	defer close(a.done)
	r := bufio.NewReaderSize(a.session, 64<<10)
	for {
		ans, err := readAnswer(r, &a.limit)
		if err != nil {
			if errors.Is(err, ErrTooLong) {
				a.readErr = err
				a.closeSession()
			}
			return
		}
		select {
		case a.answers <- ans:
		case <-a.stop: // closed: the session's end ends the reading next
		}
	}
}

// call sends one request and waits for its answer. A request that times out
// or is cancelled ends the agent: its state is unknown, and the next call
// starts a fresh one.
func (a *Agent) call(ctx context.Context, req request, timeout time.Duration) (response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return response{}, ErrGone
	}
	a.next++
	req.ID = a.next
	data, err := json.Marshal(req)
	if err != nil {
		return response{}, err
	}
	a.limit.Store(int64(cmp.Or(req.maxAnswer, maxAnswer)))
	defer a.limit.Store(maxAnswer)
	if _, err := a.session.Write(append(data, '\n')); err != nil {
		a.closeLocked()
		return response{}, a.goneErr(req, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ans := <-a.answers:
			var resp response
			if err := json.Unmarshal(ans.line, &resp); err != nil {
				a.closeLocked()
				return resp, fmt.Errorf("desktop agent answered %q: %v", truncateString(string(ans.line), 200), err)
			}
			resp.PNG = ans.frame
			if resp.ID != req.ID {
				continue // an earlier request's late answer, or a line the sandbox wrote
			}
			if resp.Error != "" {
				return resp, fmt.Errorf("%w: %s", ErrAgent, resp.Error)
			}
			return resp, nil
		case <-a.done:
			a.closeLocked()
			return response{}, a.goneErr(req, nil)
		case <-timer.C:
			a.closeLocked()
			return response{}, fmt.Errorf("%w: it did not answer %s within %s", ErrTimeout, req.Op, timeout)
		case <-ctx.Done():
			a.closeLocked()
			return response{}, ctx.Err()
		}
	}
}

// goneErr says why the agent cannot answer req: the line that was too long,
// or its end (writeErr: the request could not be sent).
func (a *Agent) goneErr(req request, writeErr error) error {
	select {
	case <-a.done:
		if a.readErr != nil {
			return fmt.Errorf("%w (waiting for the answer to %s); closed it, as something in the sandbox may be writing into its output", a.readErr, req.Op)
		}
	default:
	}
	if writeErr != nil {
		return fmt.Errorf("%w: %v", ErrGone, writeErr)
	}
	return fmt.Errorf("%w: %s", ErrGone, strings.TrimSpace(a.session.Stderr()))
}

// Close ends the agent. It is safe to call more than once.
func (a *Agent) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closeLocked()
}

func (a *Agent) closeLocked() {
	if !a.closed {
		a.closed = true
		close(a.stop)
		a.closeSession()
	}
}

// Alive says whether the agent can take requests.
func (a *Agent) Alive() bool {
	select {
	case <-a.done:
		return false
	default:
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.closed
}

func truncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
