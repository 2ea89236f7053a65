"""pilot-sandbox relay: the sandbox's end of the TCP connections the sidecar
carries (Go packages ports and relay).

Runs inside a sandbox, started by the sidecar through a `docker exec` with
stdin and stdout attached, as `python3 -I -S -c SOURCE ROLE ARGS...`, as
the desktop's user (one the exec user cannot signal, trace or read, so a
program in the sandbox cannot write into a relay's stdout what the sidecar
reads there) from /: the source is passed whole, so it always matches the
sidecar and works in any image with Python (websockify needs it), older
containers included. -I keeps the environment and the working directory
out of its imports; -S skips the site module, a third of the start. The
exec's stream is the way
between the sidecar and the sandbox, so the sandbox needs no route to the
host and the host none into it; where the host reaches the container's own
address (a local engine), the faster direct route takes the bytes instead
(the gateway, and the listener's direct connections), and the stream only
says where it listens.

Roles:

connect PORT
    Writes "+" once it waits, waits for one byte on stdin (it is started
    ahead of its connection: Go's relay.Pool), connects to 127.0.0.1:PORT
    and carries that connection over stdin and stdout as frames. An
    exposed port's connections, the desktop's ports of a sandbox without a
    network, and Chromium's DevTools port.
listen PORT NAME CAP CARRY
    A forwarded port's listener: reads a secret line on stdin, listens on
    127.0.0.1:PORT (and [::1]:PORT where there is IPv6: "localhost" may
    resolve to either), on the abstract Unix socket NAME for its relays,
    and on a free port of the container's addresses for direct
    connections; writes "+PORT" (that free port) and a newline once it
    listens (or exits 4 with "in use" on stderr: "carried" instead when
    the one listening is a listener of its own user that holds CARRY),
    then "c" for each
    connection it accepts, and gives each to the next relay of its own user
    that comes (take) or the next direct connection that brings the
    secret, whichever first; at most CAP wait, more are closed at once.
    CARRY names what it carries ("pilot-carry-PORT-HOSTPORT"): it holds
    the abstract Unix socket of that name while it listens, so that
    another sidecar of the user's carrying the same forward knows the port
    is carried, not taken (Go's ports/carried.go). It ends with its stdin.
take NAME
    A forwarded connection's relay: waits at the listener NAME for a
    connection (or exits when its stdin ends first: the sidecar let it
    go), writes "+", then carries it as connect does.
gateway PORT
    An exposed port's direct route: reads a secret line on stdin, listens
    on a free port of the container's addresses, writes "+" and that port
    and a newline, and joins each connection that sends the secret and a
    newline to 127.0.0.1:PORT. It ends with its stdin.

The direct routes say only their port: the sidecar takes the container's
address from the engine, never from the sandbox (issue 28, N1).

Frames: a 4-byte big-endian length, then that many bytes; a frame of
length 0 ends that side's output (a half-close), which the relay passes on
(the socket's write side is shut, or the sidecar is told). A stream's own
end cannot say it: the engine ends an exec's whole stream with its stdout,
and may cut the last bytes of a stdin it closes (Docker 20.10 dropped the
last 26 KiB of 3 MiB). A relay exits once both sides have ended; a stdin
that ends without its end frame (the sidecar let go) drops the connection.

Only Python's standard library, and only what each role needs at its
start: a relay's start is what a connection waits for when none waits
ready (BenchmarkRelayStart), so the listener's and gateway's modules
(hmac, with OpenSSL's hashlib: 5 ms) are imported where they are used.
"""

import errno
import os
import select
import socket
import sys
import threading

CHUNK = 256 << 10  # what a relay reads from its socket at a time: the most in a frame
MAX_FRAME = 1 << 20  # a longer frame is one no sidecar sends
END = b"\0\0\0\0"  # the frame that ends a side's output
READY = b"+"
SECRET_TIMEOUT = 10  # seconds a direct connection has to bring the secret
MAX_LINE = 128  # bytes of the secret's line


class Broken(Exception):
    """The sidecar's stream ended before its end frame, or sent a frame no
    sidecar sends: the connection is dropped."""


class Frames:
    """One side of a connection carried as frames: read from rfile (a
    buffered binary file), written to the file descriptor wfd."""

    def __init__(self, rfile, wfd):
        self.rfile = rfile
        self.wfd = wfd

    def read(self):
        """The next frame's bytes; b"" at the end frame."""
        head = self.rfile.read(4)
        if len(head) < 4:
            raise Broken("the stream ended without its end frame")
        n = int.from_bytes(head, "big")
        if n > MAX_FRAME:
            raise Broken("a frame of %d bytes" % n)
        data = self.rfile.read(n)
        if len(data) < n:
            raise Broken("the stream ended in a frame")
        return data

    def write(self, data):
        write_all(self.wfd, [len(data).to_bytes(4, "big"), data])

    def close_write(self):
        write_all(self.wfd, [END])

    def abort(self):
        """Nothing to undo: a relay process ends once its carry does."""

    def close(self):
        """The process's stdin and stdout stay open until it exits."""


def write_all(fd, parts):
    """Writes parts to fd in one system call where it takes them all."""
    n = os.writev(fd, parts)
    rest = memoryview(b"".join(parts))[n:] if n < sum(map(len, parts)) else b""
    while rest:
        rest = rest[os.write(fd, rest):]


class Sock:
    """One side of a connection that is a stream socket."""

    def __init__(self, s):
        self.s = s
        if s.family in (socket.AF_INET, socket.AF_INET6):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def read(self):
        return self.s.recv(CHUNK)

    def write(self, data):
        self.s.sendall(data)

    def close_write(self):
        self.s.shutdown(socket.SHUT_WR)

    def abort(self):
        # shutdown, unlike close, wakes a thread blocked in recv.
        try:
            self.s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.s.close()

    def close(self):
        self.s.close()


def carry(a, b):
    """Carries bytes both ways between the sides a and b, passing each
    side's end of output on as a half-close, until both directions have
    ended, or one breaks: then both are aborted. The one pump of every
    role."""
    done = threading.Condition()
    left, broken = 2, False

    def copy(src, dst):
        nonlocal left, broken
        ok = False
        try:
            while True:
                data = src.read()
                if not data:
                    break
                dst.write(data)
            dst.close_write()
            ok = True
        except (OSError, Broken):
            # Before carry returns and closes them: a socket closed while
            # the other thread waits in recv stays open until it returns.
            a.abort()
            b.abort()
        with done:
            left -= 1
            broken |= not ok
            done.notify()

    for src, dst in ((a, b), (b, a)):
        threading.Thread(target=copy, args=(src, dst), daemon=True).start()
    with done:
        # A side that broke may leave the other's thread blocked on a
        # stream nobody ends (a relay's stdin): it is not waited for.
        done.wait_for(lambda: left == 0 or broken)
    a.close()
    b.close()


def read_secret(rfile):
    """The secret line the sidecar sends first, without its newline."""
    return rfile.readline(MAX_LINE).strip()


def admitted(c, secret, timeout=SECRET_TIMEOUT):
    """Reads the secret and a newline from a new connection within timeout,
    and closes it if they are not there. The comparison takes the same time
    whatever the bytes."""
    import hmac  # here: the connect role, which starts most, needs none

    c.settimeout(timeout)
    want = secret + b"\n"
    got = b""
    try:
        while len(got) < len(want):
            d = c.recv(len(want) - len(got))
            if not d:
                break
            got += d
    except OSError:
        pass
    if not hmac.compare_digest(got, want):
        c.close()
        return False
    c.settimeout(None)
    return True


def direct_listener():
    """Listens on a free port of every address of the container; returns
    the socket and the line that says where ("+PORT")."""
    g = socket.socket()
    g.bind(("0.0.0.0", 0))
    g.listen(128)
    return g, "+%d" % g.getsockname()[1]


def accepted(listener):
    """The connections listener accepts, until it is closed."""
    while True:
        try:
            c, _ = listener.accept()
        except OSError:
            return
        yield c


def serve_forever(listener, handle):
    """Runs handle on each connection listener accepts, in a thread of its
    own."""
    for c in accepted(listener):
        threading.Thread(target=handle, args=(c,), daemon=True).start()


def wait_for_end(rfile):
    """Returns once the sidecar's stream ends: the sidecar let go."""
    while rfile.read1(4096):
        pass


def role_connect(stream, port):
    os.write(stream.wfd, READY)
    if not stream.rfile.read(1):
        return 0
    try:
        s = socket.create_connection(("127.0.0.1", int(port)))
    except OSError as e:
        sys.stderr.write("connect to 127.0.0.1:%s in the sandbox: %s\n" % (port, e.strerror))
        return 3
    carry(Sock(s), stream)
    return 0


def role_take(stream, name):
    u = socket.socket(socket.AF_UNIX)
    try:
        u.connect("\0" + name)
    except OSError:
        return 0
    if stream.rfile.fileno() in select.select([u, stream.rfile.fileno()], [], [])[0]:
        return 0  # the sidecar let go first
    _, fds, _, _ = socket.recv_fds(u, 1, 1)
    u.close()
    if not fds:
        return 0
    s = socket.socket(fileno=fds[0])
    os.write(stream.wfd, READY)
    carry(Sock(s), stream)
    return 0


def role_gateway(stream, port):
    secret = read_secret(stream.rfile)
    port = int(port)
    g, where = direct_listener()
    os.write(stream.wfd, (where + "\n").encode())

    def serve(c):
        if not admitted(c, secret):
            return
        try:
            s = socket.create_connection(("127.0.0.1", port))
        except OSError:
            c.close()
            return
        carry(Sock(c), Sock(s))

    threading.Thread(target=serve_forever, args=(g, serve), daemon=True).start()
    wait_for_end(stream.rfile)
    return 0


class InUse(Exception):
    """Something listens on the port already."""


def loopback_listeners(port):
    """Listens on 127.0.0.1:port, and [::1]:port where there is IPv6."""
    out = []
    for fam, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            l = socket.socket(fam)
            l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if fam == socket.AF_INET6:
                l.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            l.bind((addr, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise InUse() from e
            if fam == socket.AF_INET6:
                continue
            raise
        l.listen(128)
        out.append(l)
    return out


class Listener:
    """A forwarded port's connections waiting for a relay or a direct
    connection: at most cap of them; told (notify) of each."""

    def __init__(self, cap, secret, notify):
        self.cap = cap
        self.secret = secret
        self.notify = notify
        self.queue = []  # at most cap, a few dozen
        self.cond = threading.Condition()

    def offer(self, c):
        """Queues a connection made in the sandbox; closes it at once when
        cap wait already."""
        with self.cond:
            if len(self.queue) >= self.cap:
                c.close()
                return False
            self.queue.append(c)
            self.cond.notify()
        self.notify()
        return True

    def next(self):
        with self.cond:
            self.cond.wait_for(lambda: self.queue)
            return self.queue.pop(0)

    def give_back(self, c):
        with self.cond:
            self.queue.insert(0, c)
            self.cond.notify()

    def accept(self, l):
        for c in accepted(l):
            self.offer(c)

    def hand(self, u):
        """Gives each relay that connects to the Unix socket u the next
        connection, as a file descriptor. An abstract socket's name is
        anyone's to connect to: only a relay of the listener's own user
        (the sidecar's) is given one."""
        for r in accepted(u):
            if peer_uid(r) != os.getuid():
                r.close()
                continue
            c = self.next()
            try:
                socket.send_fds(r, [READY], [c.fileno()])
                c.close()
            except OSError:
                self.give_back(c)
            r.close()

    def direct(self, x):
        """Joins a direct connection that brings the secret to the next
        connection."""
        if admitted(x, self.secret):
            carry(Sock(self.next()), Sock(x))


def peer_uid(s):
    """The user of the process at the other end of the Unix socket s."""
    creds = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[4:8], sys.byteorder)  # struct ucred: pid, uid, gid


def carried(carry):
    """Says the listener that holds the abstract socket carry is a relay
    of this one's user: the same forward, carried by another sidecar. A
    program of the sandbox's user may hold the name too: it is not
    believed."""
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(TIMEOUT_MARK)
    try:
        c.connect("\0" + carry)
        return peer_uid(c) == os.getuid()
    except OSError:
        return False
    finally:
        c.close()


# How long carried waits for the other listener's socket.
TIMEOUT_MARK = 2


def hold_mark(carry):
    """Holds the abstract socket carry while the listener runs, accepting
    and closing each connection (carried's); a name already held (by a
    program of the sandbox) is left alone: the forward works, unmarked."""
    m = socket.socket(socket.AF_UNIX)
    try:
        m.bind("\0" + carry)
        m.listen(16)
    except OSError:
        m.close()
        return
    threading.Thread(target=lambda: [c.close() for c in accepted(m)], daemon=True).start()


def role_listen(stream, port, name, cap, carry):
    secret = read_secret(stream.rfile)
    try:
        ls = loopback_listeners(int(port))
    except InUse:
        sys.stderr.write("carried\n" if carried(carry) else "in use\n")
        return 4
    except OSError as e:
        sys.stderr.write("listen on 127.0.0.1:%s: %s\n" % (port, e.strerror))
        return 5
    hold_mark(carry)
    u = socket.socket(socket.AF_UNIX)
    u.bind("\0" + name)
    u.listen(128)
    listener = Listener(int(cap), secret, lambda: os.write(stream.wfd, b"c"))
    g, where = direct_listener()
    os.write(stream.wfd, (where + "\n").encode())
    for l in ls:
        threading.Thread(target=listener.accept, args=(l,), daemon=True).start()
    threading.Thread(target=listener.hand, args=(u,), daemon=True).start()
    threading.Thread(target=serve_forever, args=(g, listener.direct), daemon=True).start()
    wait_for_end(stream.rfile)
    return 0


# Each role and how many arguments it takes.
ROLES = {
    "connect": (role_connect, 1),
    "take": (role_take, 1),
    "gateway": (role_gateway, 1),
    "listen": (role_listen, 4),
}


def main(argv):
    role, nargs = ROLES.get(argv[0] if argv else "", (None, 0))
    if role is None or len(argv) - 1 != nargs:
        sys.stderr.write("usage: pilot-relay connect PORT | take NAME | gateway PORT | listen PORT NAME CAP CARRY\n")
        return 2
    return role(Frames(open(0, "rb", buffering=CHUNK, closefd=False), 1), *argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
