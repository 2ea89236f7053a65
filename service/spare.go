package service

import (
	"context"
	"net"
	"sync"
)

// spareDialer keeps one DevTools pipe started ahead of need, so that a
// client's connection through the relay does not wait for an exec to be
// created and started and its Python to load (README, The browser: what it
// costs, has the numbers). The pipe connects to Chromium only once the
// first bytes come (devtoolsPipe), so a spare holds nothing of Chromium's
// and still works after Chromium was closed and started again.
type spareDialer struct {
	dial   func(context.Context) (net.Conn, error)
	ctx    context.Context // ends with the relay: the spare's exec is made under it
	cancel context.CancelFunc

	mu    sync.Mutex
	spare chan dialed // the pipe being made ahead; nil when none
}

type dialed struct {
	conn net.Conn
	err  error
}

func newSpareDialer(dial func(context.Context) (net.Conn, error)) *spareDialer {
	ctx, cancel := context.WithCancel(context.Background())
	s := &spareDialer{dial: dial, ctx: ctx, cancel: cancel}
	s.prepare()
	return s
}

// Dial hands over the spare pipe, or dials one if there is none or it
// failed, and starts the next spare.
func (s *spareDialer) Dial(ctx context.Context) (net.Conn, error) {
	s.mu.Lock()
	ch := s.spare
	s.spare = nil
	s.mu.Unlock()
	defer s.prepare()
	if ch != nil {
		select {
		case d := <-ch:
			if d.err == nil && d.conn.(*watchedConn).alive() {
				return d.conn, nil
			}
			if d.conn != nil {
				d.conn.Close()
			}
			// A spare that failed (Docker busy, the sandbox stopping) or
			// whose pipe has ended since (killed in the sandbox) gets one
			// fresh try, as a connection without spares would.
		case <-ctx.Done():
			go discard(ch)
			return nil, ctx.Err()
		}
	}
	return s.dial(ctx)
}

// prepare starts making a spare pipe, unless one is under way or the
// relay is closed.
func (s *spareDialer) prepare() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spare != nil || s.ctx.Err() != nil {
		return
	}
	ch := make(chan dialed, 1)
	s.spare = ch
	go func() {
		c, err := s.dial(s.ctx)
		if err != nil {
			ch <- dialed{nil, err}
			return
		}
		ch <- dialed{watch(c), nil}
	}()
}

// Close ends the spare pipe, and makes no more.
func (s *spareDialer) Close() {
	s.cancel()
	s.mu.Lock()
	ch := s.spare
	s.spare = nil
	s.mu.Unlock()
	if ch != nil {
		go discard(ch)
	}
}

// discard closes the pipe a spare channel yields, once it comes.
func discard(ch chan dialed) {
	if d := <-ch; d.conn != nil {
		d.conn.Close()
	}
}

// watchedConn is a spare pipe whose end is seen while it waits: the pipe
// writes nothing before it is written to, so a read that returns while it
// is spare means it has ended. That first read's result is then the
// connection's first.
type watchedConn struct {
	net.Conn
	first  chan firstRead
	peeked *firstRead // the first read's result, once alive took it
	read   bool       // the first read's result was returned
}

type firstRead struct {
	b   byte
	n   int
	err error
}

func watch(c net.Conn) *watchedConn {
	w := &watchedConn{Conn: c, first: make(chan firstRead, 1)}
	go func() {
		var b [1]byte
		n, err := c.Read(b[:])
		w.first <- firstRead{b[0], n, err}
	}()
	return w
}

// alive says whether the pipe has not ended. Called before the
// connection is handed over, never at the same time as Read.
func (w *watchedConn) alive() bool {
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

func (w *watchedConn) Read(p []byte) (int, error) {
	if w.read {
		return w.Conn.Read(p)
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
