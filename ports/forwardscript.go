package ports

import "strconv"

// A forwarded port is a listener process in the sandbox (listenerScript)
// and, for each connection it accepts, a relay process (forwardRelayScript)
// that takes the accepted socket from the listener over a Unix socket
// (SCM_RIGHTS) and carries its bytes over its own stdin and stdout: the
// sidecar's end is an attached exec of each, so the sandbox needs no route
// to the host, and a remote engine works the same. The listener's stdout
// tells the sidecar of each connection ("c"), so that it starts a relay
// for it; relays are also started ahead, so that a connection does not
// wait for an exec to start.

// listenerScript reads the secret from stdin, listens on 127.0.0.1:PORT
// (and [::1]:PORT where the sandbox has IPv6, since "localhost" may
// resolve to either), on the abstract Unix socket NAME for relays, and on
// a free port of the container's addresses for the direct route
// (direct.go). It writes "+IP PORT" and a newline once it listens (or
// exits 4 with "in use" on stderr), then "c" for each connection it
// accepts, and gives each to the next relay that comes, or the next
// direct connection that brings the secret, whichever first; at most CAP
// wait (more are closed at once). It ends with its stdin: when the
// sidecar lets go.
const listenerScript = `import collections, errno, hmac, os, socket, sys, threading
` + tcpJoin + `
secret = os.read(0, 64).strip()
port, name, cap = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ls = []
for fam, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        l = socket.socket(fam)
        l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            l.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        l.bind((addr, port))
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            sys.stderr.write("in use\n")
            sys.exit(4)
        if fam == socket.AF_INET6:
            continue
        sys.stderr.write("listen on %s:%d: %s\n" % (addr, port, e.strerror))
        sys.exit(5)
    l.listen(128)
    ls.append(l)
u = socket.socket(socket.AF_UNIX)
u.bind("\0" + name)
u.listen(128)
queue, cond = collections.deque(), threading.Condition()
def accept(l):
    while True:
        c, _ = l.accept()
        with cond:
            if len(queue) >= cap:
                c.close()
                continue
            queue.append(c)
            cond.notify()
        os.write(1, b"c")
def hand():
    while True:
        r, _ = u.accept()
        with cond:
            while not queue:
                cond.wait()
            c = queue.popleft()
        try:
            socket.send_fds(r, [b"+"], [c.fileno()])
            c.close()
        except OSError:
            with cond:
                queue.appendleft(c)
                cond.notify()
        r.close()
def direct(x):
    if not admitted(x):
        return
    with cond:
        while not queue:
            cond.wait()
        c = queue.popleft()
    join(c, x)
def directs():
    while True:
        x, _ = g.accept()
        threading.Thread(target=direct, args=(x,), daemon=True).start()
g, where = direct_listener()
os.write(1, ("+" + where + "\n").encode())
for l in ls:
    threading.Thread(target=accept, args=(l,), daemon=True).start()
threading.Thread(target=hand, daemon=True).start()
threading.Thread(target=directs, daemon=True).start()
while os.read(0, 4096):
    pass
`

// forwardRelayScript waits, at the listener NAME, for a connection made
// in the sandbox (or exits when its stdin ends first: the sidecar let it
// go), writes "+", then carries it (relayPump).
const forwardRelayScript = `import os, select, socket, sys, threading
u = socket.socket(socket.AF_UNIX)
try:
    u.connect("\0" + sys.argv[1])
except OSError:
    sys.exit(0)
if 0 in select.select([u, 0], [], [])[0]:
    sys.exit(0)
_, fds, _, _ = socket.recv_fds(u, 1, 1)
if not fds:
    sys.exit(0)
s = socket.socket(fileno=fds[0])
u.close()
os.write(1, b"+")
` + relayPump

// listenerCommand is the argv of the listener for port.
func listenerCommand(port int, name string, queue int) []string {
	return []string{"python3", "-S", "-c", listenerScript, strconv.Itoa(port), name, strconv.Itoa(queue)}
}

// forwardRelayCommand is the argv of a relay of the listener name.
func forwardRelayCommand(name string) []string {
	return []string{"python3", "-S", "-c", forwardRelayScript, name}
}
