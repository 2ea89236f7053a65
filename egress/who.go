package egress

import (
	"bufio"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Who opened a connection, and what for, is asked of a program in the
// sandbox (resources/hints/pilot_who.py): only the sandbox's own /proc
// knows which of its processes holds a socket. The helper container shares
// the sandbox's network namespace, not its processes, so the proxy cannot
// tell. The program runs as the sandbox user (desktop.User), the user of
// every exec: a sandbox holds no capability, so even its root could not
// read another user's descriptors and environment, and the sandbox user's
// are the programs an agent starts. What it says is the sandbox's word
// (its programs can trace it, as they can change their own environment):
// a hint shown to the user, never a ground for a decision. The program runs for as long as the run, started beside the
// proxy; it is asked only before a question and before a refusal (what the
// user sees), so an allowed connection never waits for it.

// whoCommand runs the program, its source whole on the command line as the
// relay's is (relay.Command).
var whoCommand = []string{"python3", "-I", "-S", "-c", resources.Who()}

// whoWait bounds one look (Config.WhoWait changes it): the program reads /proc/net/tcp (4 to 5 ms
// here, the kernel walking its whole table) and the processes'
// descriptors (1 to 2 ms for 43 processes).
const whoWait = 30 * time.Millisecond

// maxWhoLine bounds one answer of the program.
const maxWhoLine = 4 << 10

// whoAnswer is one line of the program.
type whoAnswer struct {
	Port    int    `json:"port"`
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Cause   string `json:"cause"`
}

// finder talks to one run's program: each question a source port, each
// answer naming it again, so answers that come late are told apart.
type finder struct {
	sess service.ExecSession
	wait time.Duration // bounds one look
	mu   sync.Mutex    // guards waiting and writes to sess
	// waiting are the looks under way by source port.
	waiting map[int][]chan whoAnswer
	done    chan struct{} // closed when the program's output ends
}

// startFinder starts the program in the container.
func startFinder(ctx context.Context, docker Containers, id string, wait time.Duration) (*finder, error) {
	sess, err := docker.ExecAttach(ctx, id, service.ExecSpec{Cmd: whoCommand, User: desktop.User, WorkDir: "/"})
	if err != nil {
		return nil, err
	}
	f := &finder{sess: sess, wait: wait, waiting: map[int][]chan whoAnswer{}, done: make(chan struct{})}
	go f.read()
	return f, nil
}

// read hands each answer to the looks waiting for its port.
func (f *finder) read() {
	defer close(f.done)
	r := bufio.NewReaderSize(f.sess, maxWhoLine)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return // a line over the bound ends the program's use too
		}
		var a whoAnswer
		if json.Unmarshal(line, &a) != nil {
			continue
		}
		f.mu.Lock()
		waiting := f.waiting[a.Port]
		delete(f.waiting, a.Port)
		f.mu.Unlock()
		for _, ch := range waiting {
			ch <- a
		}
	}
}

// find asks who holds the connection from port; false when the answer
// does not come within ctx or the finder's wait, or the program is gone.
func (f *finder) find(ctx context.Context, port int) (whoAnswer, bool) {
	ch := make(chan whoAnswer, 1)
	f.mu.Lock()
	f.waiting[port] = append(f.waiting[port], ch)
	_, err := f.sess.Write([]byte(strconv.Itoa(port) + "\n"))
	f.mu.Unlock()
	if err != nil {
		return whoAnswer{}, false
	}
	timer := time.NewTimer(f.wait)
	defer timer.Stop()
	select {
	case a := <-ch:
		return a, true
	case <-f.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	f.mu.Lock()
	if len(f.waiting[port]) > 0 {
		delete(f.waiting, port) // the late answer goes nowhere
	}
	f.mu.Unlock()
	return whoAnswer{}, false
}

// close ends the program.
func (f *finder) close() { f.sess.Close() }

// hints is a sandbox's hints function on a finder: the process, and the
// cause its exec id stands for, when the enforcer still keeps it.
func (e *Enforcer) hints(f *finder) func(context.Context, int) (*Process, *Cause) {
	return func(ctx context.Context, port int) (*Process, *Cause) {
		a, ok := f.find(ctx, port)
		if !ok || a.PID == 0 {
			return nil, nil
		}
		p := &Process{PID: a.PID, Command: a.Command}
		if a.Cause == "" {
			return p, nil
		}
		if c, ok := e.causes.get(a.Cause); ok {
			return p, &c
		}
		return p, nil
	}
}

// learning is one connection's hints, looked up at most once, by whoever
// needs them first: the judge before it asks, the carrier before it
// refuses.
type learning struct {
	once    sync.Once
	look    func(context.Context, int) (*Process, *Cause)
	port    int
	process *Process
	cause   *Cause
}

// get looks the hints up, the first time.
func (l *learning) get(ctx context.Context) (*Process, *Cause) {
	l.once.Do(func() {
		if l.look != nil && l.port != 0 {
			l.process, l.cause = l.look(ctx, l.port)
		}
	})
	return l.process, l.cause
}

// learned is what get learned, if it was called; it never looks.
func (l *learning) learned() (*Process, *Cause) {
	l.once.Do(func() {})
	return l.process, l.cause
}
