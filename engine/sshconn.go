package engine

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"
)

// stdioConn is a connection to the remote engine over an ssh's standard
// input and output: `docker system dial-stdio` on the other side carries
// the bytes to its engine. The pipes are the process's own (os.Pipe), so
// that deadlines work as on a socket.
type stdioConn struct {
	cmd    *exec.Cmd
	r      *os.File // the ssh's stdout
	w      *os.File // its stdin
	stderr *cappedBuffer
	once   sync.Once
	exited chan struct{} // closed when the ssh ended; exit is then set
	exit   error
	d      *sshDialer
}

// dialStdio starts `ssh ... docker system dial-stdio` on the master.
func (d *sshDialer) dialStdio(ctx context.Context) (net.Conn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	// Not CommandContext: ctx bounds the dial, not the connection.
	cmd := exec.Command(d.ssh, d.args(nil, "docker", "system", "dial-stdio")...)
	c := &stdioConn{cmd: cmd, r: outR, w: inW, stderr: &cappedBuffer{max: maxSSHOutput}, exited: make(chan struct{}), d: d}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.stderr
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		outR.Close()
		inW.Close()
		return nil, d.failure(ctx, err, "")
	}
	go func() { c.exit = cmd.Wait(); close(c.exited) }() // Close ends it
	return c, nil
}

// Read reads what the engine sent. The end of it is errDropped when ssh
// failed (it lost its master, or the master its link) rather than ended
// with dial-stdio: to the library both are the end of a stream, and an
// exec would pass for a command whose output ended.
func (c *stdioConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		select {
		case <-c.exited:
			if c.exit != nil {
				err = errDropped
				c.d.dropped()
			}
		case <-time.After(2 * time.Second):
		}
	}
	return n, err
}

func (c *stdioConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// CloseWrite ends the engine's side of the request (go-dockerclient
// half-closes an attach's connection when its input ends).
func (c *stdioConn) CloseWrite() error { return c.w.Close() }

// Close ends the ssh. dial-stdio would end by itself once both sides
// close, but a connection is closed when its caller is done with it.
func (c *stdioConn) Close() error {
	c.once.Do(func() {
		c.w.Close()
		c.r.Close()
		if c.cmd.Process != nil {
			c.cmd.Process.Kill()
		}
	})
	return nil
}

func (c *stdioConn) LocalAddr() net.Addr  { return stdioAddr{} }
func (c *stdioConn) RemoteAddr() net.Addr { return stdioAddr{} }

func (c *stdioConn) SetDeadline(t time.Time) error {
	if err := c.r.SetReadDeadline(t); err != nil {
		return err
	}
	return c.w.SetWriteDeadline(t)
}

func (c *stdioConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *stdioConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }

// stdioAddr is a stdioConn's address: there is none.
type stdioAddr struct{}

func (stdioAddr) Network() string { return "ssh" }
func (stdioAddr) String() string  { return "docker system dial-stdio" }

// forwardedConn is a connection through the engine's socket forwarded by
// the master. Its end is errDropped when the master is gone: a dropped
// link ends the master, and every channel with it, which to the library
// is the end of a stream like any other.
type forwardedConn struct {
	*net.UnixConn
	d *sshDialer
}

func (c forwardedConn) Read(p []byte) (int, error) {
	n, err := c.UnixConn.Read(p)
	if err == io.EOF && !c.d.masterAlive() {
		err = errDropped
		c.d.dropped()
	}
	return n, err
}
