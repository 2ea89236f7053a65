package relay

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// A relay of the connect role says it waits with readyByte, and connects
// once it reads goByte: it can be started ahead of its connection, which
// then waits for a round trip instead of an exec's start and Python's
// (120 to 190 ms under load, measured with BenchmarkRelayStart).
const readyByte = '+'

var goByte = []byte{'\n'}

// startTimeout bounds a relay's start, to its ready byte.
const startTimeout = 30 * time.Second

// Start starts a relay of the connect role and returns its stream at
// once; the pool waits for its ready byte.
type Start func(ctx context.Context) (Session, error)

// Pool keeps relays started and waiting for their connections. A relay
// that ends while it waits (killed in the sandbox, or the sandbox
// stopping) is seen, and not handed out.
type Pool struct {
	start  Start
	size   int
	ctx    context.Context // ends with the pool: relays are started under it
	cancel context.CancelFunc

	mu    sync.Mutex // guards slots
	slots []*slot    // relays started or starting, oldest first
}

// slot is a relay being started; done closes once w or err is set.
type slot struct {
	done chan struct{}
	w    *waiting
	err  error
}

// NewPool returns a pool that keeps size relays that start calls started
// waiting, from the first Fill or Get on.
func NewPool(size int, start Start) *Pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{start: start, size: size, ctx: ctx, cancel: cancel}
}

// Fill starts relays until size are waiting or starting, unless the pool
// is closed.
func (p *Pool) Fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.ctx.Err() == nil && len(p.slots) < p.size {
		s := &slot{done: make(chan struct{})}
		p.slots = append(p.slots, s)
		go func() {
			defer close(s.done)
			session, err := p.ready(p.ctx)
			if err == nil {
				s.w = watch(session)
			}
			s.err = err
		}()
	}
}

// Get returns a connection over a relay told to connect: the oldest one
// started (waiting for it if it is still starting), else one started now.
// It starts another for the pool.
func (p *Pool) Get(ctx context.Context) (*Conn, error) {
	p.mu.Lock()
	var s *slot
	if len(p.slots) > 0 {
		s, p.slots = p.slots[0], p.slots[1:]
	}
	p.mu.Unlock()
	defer p.Fill()
	if s != nil {
		select {
		case <-s.done:
			if s.err == nil && s.w.alive() {
				if _, err := s.w.Write(goByte); err == nil {
					return NewConn(s.w), nil
				}
			}
			if s.w != nil {
				s.w.Close()
			}
			// A relay that failed to start (the engine busy, the sandbox
			// stopping) or ended while it waited gets one fresh try, as a
			// connection without a pool would.
		case <-ctx.Done():
			go discard(s)
			return nil, ctx.Err()
		}
	}
	session, err := p.ready(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := session.Write(goByte); err != nil {
		session.Close()
		return nil, err
	}
	return NewConn(session), nil
}

// ready starts a relay and returns once it waits.
func (p *Pool) ready(ctx context.Context) (Session, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	s, err := p.start(ctx)
	if err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() { ready <- Ready(s) }()
	select {
	case err = <-ready:
	case <-ctx.Done():
		s.Close()
		<-ready // the read ends with the stream
		err = fmt.Errorf("%w %s", ctx.Err(), s.Stderr())
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("the relay into the sandbox did not start: %w", err)
	}
	return s, nil
}

// Waiting is how many relays have started and wait.
func (p *Pool) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.slots {
		select {
		case <-s.done:
			if s.err == nil {
				n++
			}
		default:
		}
	}
	return n
}

// Close ends the waiting relays and those starting, and starts no more.
func (p *Pool) Close() {
	p.cancel()
	p.mu.Lock()
	slots := p.slots
	p.slots = nil
	p.mu.Unlock()
	for _, s := range slots {
		go discard(s)
	}
}

// discard ends the relay of s once it has started.
func discard(s *slot) {
	<-s.done
	if s.w != nil {
		s.w.Close()
	}
}

// waiting is a relay's session while it waits in the pool: the relay
// writes nothing before it is told to connect, so a read that returns
// meanwhile means it has ended. That first read's result is then the
// connection's first.
type waiting struct {
	Session
	first  chan firstRead
	peeked *firstRead // the first read's result, once alive took it
	read   bool       // the first read's result was returned
}

type firstRead struct {
	b   byte
	n   int
	err error
}

func watch(s Session) *waiting {
	w := &waiting{Session: s, first: make(chan firstRead, 1)}
	go func() {
		var b [1]byte
		n, err := s.Read(b[:])
		w.first <- firstRead{b[0], n, err}
	}()
	return w
}

// alive says whether the relay has not ended. Called before the session
// is handed out, never at the same time as Read.
func (w *waiting) alive() bool {
	if w.peeked == nil {
		select {
		case r := <-w.first:
			w.peeked = &r
		default:
			return true
		}
	}
	return w.peeked.n > 0
}

func (w *waiting) Read(p []byte) (int, error) {
	if w.read {
		return w.Session.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	r := w.peeked
	if r == nil {
		got := <-w.first
		r = &got
	}
	w.read = true
	if r.n == 0 {
		return 0, r.err
	}
	p[0] = r.b
	return 1, nil
}

// Ready reads a relay's ready byte: a relay of the connect role waits for
// its connection then, one of the take role has its connection.
func Ready(s Session) error {
	b := make([]byte, 1)
	_, err := io.ReadFull(s, b)
	switch {
	case err != nil:
		return fmt.Errorf("%w %s", err, s.Stderr())
	case b[0] != readyByte:
		return fmt.Errorf("it wrote %q %s", b, s.Stderr())
	}
	return nil
}
