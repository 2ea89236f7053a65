// Package tcptest serves TCP connections for tests: a listener on an
// address of the host that hands each connection to a function.
package tcptest

import (
	"net"
	"testing"
)

// Serve listens on addr ("127.0.0.1:0" for a free loopback port) and runs
// handle for each connection, in a goroutine of its own, closing the
// connection once handle returns; the listener closes when the test ends.
// It returns the listener's address.
func Serve(t testing.TB, addr string, handle func(net.Conn)) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr)
}
