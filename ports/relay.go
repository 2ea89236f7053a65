package ports

import (
	"strconv"
)

// relayScript says it is ready ("+"), waits for a byte on stdin (it may
// be started ahead of its connection: see warmRelays), then connects to
// 127.0.0.1:PORT inside the sandbox and carries that connection
// (relayPump): the sidecar's end of one exposed connection. Python is in
// every sandbox image (websockify); -S skips the site module, a third of
// its start.
const relayScript = `import os, socket, sys, threading
os.write(1, b"+")
if not os.read(0, 1):
    sys.exit(0)
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
except OSError as e:
    sys.stderr.write("connect to 127.0.0.1:%s in the sandbox: %s\n" % (sys.argv[1], e.strerror))
    sys.exit(3)
` + relayPump

// relayPump carries the connection s over the relay's stdin and stdout,
// both as frames: a 4-byte big-endian length, then as many bytes; a frame
// of length 0 is the end of that side's output (a half-close), which it
// passes on: the socket's write side is shut, or the sidecar is told. A
// stream's own end cannot say it: the engine ends an exec's whole stream
// with its stdout, and may cut the last bytes of a stdin it closes
// (Docker 20.10 dropped the last 26 KiB of 3 MiB, seen in the forward
// test). The relay exits once both sides have ended; a stdin that ends
// without its end frame (the sidecar let go) drops the connection.
const relayPump = `s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def out(b):
    v = memoryview(b)
    while v:
        v = v[os.write(1, v):]
def up():
    f = open(0, "rb", buffering=1 << 18)
    try:
        while True:
            h = f.read(4)
            n = int.from_bytes(h, "big")
            if len(h) < 4:
                break
            if n == 0:
                s.shutdown(socket.SHUT_WR)
                return
            d = f.read(n)
            if len(d) < n:
                break
            s.sendall(d)
    except OSError:
        pass
    os._exit(0)
t = threading.Thread(target=up, daemon=True)
t.start()
try:
    while True:
        d = s.recv(262144)
        if not d:
            break
        out(len(d).to_bytes(4, "big"))
        out(d)
    out(b"\0\0\0\0")
except OSError:
    os._exit(0)
t.join()
`

// relayCommand is the argv of the relay to port.
func relayCommand(port int) []string {
	return []string{"python3", "-S", "-c", relayScript, strconv.Itoa(port)}
}
