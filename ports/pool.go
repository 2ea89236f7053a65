package ports

import (
	"context"
	"fmt"
	"io"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// warmRelays is how many relays an exposure keeps started and waiting: a
// new connection takes one and waits for a round trip instead of an exec's
// start (120 to 190 ms under load, measured).
const warmRelays = 2

// goByte tells a waiting relay to connect; a relay writes readyByte once
// it waits.
var goByte = []byte{'\n'}

const readyByte = '+'

// startRelay starts a relay to x's port and returns once it waits for
// goByte.
func (e *Exposer) startRelay(x *exposure) (service.ExecSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	s, err := e.sb.ExecAttachArgv(ctx, x.project, service.ExecSpec{Cmd: relayCommand(x.Port)})
	if err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() {
		b := make([]byte, 1)
		_, err := io.ReadFull(s, b)
		if err == nil && b[0] != readyByte {
			err = fmt.Errorf("it wrote %q", b)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		s.Close()
		<-ready
		return nil, fmt.Errorf("the relay into the sandbox did not start: %w %s", err, s.Stderr())
	}
	return s, nil
}

// warm starts a relay for x's pool in the background, unless the pool is
// full (counting those starting) or x is closed.
func (e *Exposer) warm(x *exposure) {
	x.mu.Lock()
	if x.conns == nil || len(x.pool)+x.warming >= warmRelays {
		x.mu.Unlock()
		return
	}
	x.warming++
	x.mu.Unlock()
	go func() {
		s, err := e.startRelay(x)
		x.mu.Lock()
		defer x.mu.Unlock()
		x.warming--
		switch {
		case err != nil:
			// The next connection starts its own, and tries again.
		case x.conns == nil:
			s.Close()
		default:
			x.pool <- s // the count leaves room
		}
	}()
}

// relay returns a relay told to connect: a warm one if there is one, else
// one started now. It warms another.
func (e *Exposer) relay(x *exposure) (service.ExecSession, error) {
	defer e.warm(x)
	for {
		var s service.ExecSession
		select {
		case s = <-x.pool:
		default:
			fresh, err := e.startRelay(x)
			if err != nil {
				return nil, err
			}
			if _, err := fresh.Write(goByte); err != nil {
				fresh.Close()
				return nil, err
			}
			return fresh, nil
		}
		if _, err := s.Write(goByte); err == nil {
			return s, nil
		}
		s.Close() // it ended while it waited: the sandbox stopped, or it was killed
	}
}

// drainPool ends the waiting relays; x.mu is held.
func (x *exposure) drainPool() {
	for {
		select {
		case s := <-x.pool:
			s.Close()
		default:
			return
		}
	}
}
