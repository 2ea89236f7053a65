package ports

import (
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// relayScript says it is ready ("+"), waits for a byte on stdin (it may
// be started ahead of its connection: see warmRelays), then connects to 127.0.0.1:PORT inside the
// sandbox and carries
// bytes between that socket and its own stdin and stdout: the sidecar's
// end of one exposed connection. When stdin ends it shuts the socket's
// write side (the program sees the client's end of input); when the
// program closes the socket the relay exits, which ends the connection on
// the host. Python is in every sandbox image (websockify); -S skips the
// site module, a third of its start.
const relayScript = `import os, socket, sys, threading
os.write(1, b"+")
if not os.read(0, 1):
    sys.exit(0)
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
except OSError as e:
    sys.stderr.write("connect to 127.0.0.1:%s in the sandbox: %s\n" % (sys.argv[1], e.strerror))
    sys.exit(3)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def up():
    try:
        while True:
            d = os.read(0, 262144)
            if not d:
                break
            s.sendall(d)
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
threading.Thread(target=up, daemon=True).start()
try:
    while True:
        d = s.recv(262144)
        if not d:
            break
        v = memoryview(d)
        while v:
            v = v[os.write(1, v):]
except OSError:
    pass
`

// relayCommand is the argv of the relay to port.
func relayCommand(port int) []string {
	return []string{"python3", "-S", "-c", relayScript, strconv.Itoa(port)}
}

// halfCloser is a stream whose writing side can be closed alone: a TCP
// connection, and the engine's attached exec.
type halfCloser interface {
	CloseWrite() error
}

// pump carries bytes both ways between the host's connection and the
// relay's exec until both directions end, and closes both. The client's
// end of input reaches the program in the sandbox as the end of its
// input; the program's end (the relay exits) ends the connection.
func pump(conn net.Conn, session service.ExecSession) {
	var wg sync.WaitGroup
	wg.Go(func() {
		// Client to sandbox.
		_, err := io.Copy(session, conn)
		if hc, ok := session.(halfCloser); ok && err == nil {
			hc.CloseWrite()
			return
		}
		session.Close()
	})
	// Sandbox to client: when it ends, the program closed its side or
	// the relay could not connect, and nothing more will come.
	io.Copy(conn, session)
	session.Close()
	conn.Close()
	wg.Wait()
}
