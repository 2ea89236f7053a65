package relay

import (
	"io"
	"sync"
)

// HalfConn is a connection whose writing side can be closed alone:
// *net.TCPConn and *Conn are.
type HalfConn interface {
	io.ReadWriteCloser
	CloseWrite() error
}

// Join carries bytes both ways between a and b, passing each side's end
// of output on as a half-close, until both directions have ended; a
// failure either way ends both. Then it closes both. The one pump of
// every relay, exec or direct.
func Join(a, b HalfConn) {
	var wg sync.WaitGroup
	half := func(dst, src HalfConn) {
		if _, err := io.Copy(dst, src); err != nil {
			dst.Close()
			src.Close()
			return
		}
		dst.CloseWrite()
	}
	wg.Go(func() { half(b, a) })
	half(a, b)
	wg.Wait()
	a.Close()
	b.Close()
}
