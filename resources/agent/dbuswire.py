"""A small D-Bus client over a Unix socket, in Python's standard library.

The desktop agent reads the accessibility tree of the sandbox's programs
from the accessibility bus (atspi.py). The bus and every program on it are
the sandbox user's: what comes back is hostile input, read by a process of
the desktop's user. So everything here is bounded: a message's size, the
nesting of its values, the time a reply may take, and the number of
messages read while waiting for one; a peer that is not the bus of the
sandbox user (SO_PEERCRED) is refused before a byte is sent.

python3-gi with pyatspi would do the same for 30 MB of image and a GLib
main loop in the agent; this is the few hundred lines the agent needs:
EXTERNAL authentication, method calls (many sent before their replies are
read: a tree's extents cost one round trip, not one per node), and the
wire format (https://dbus.freedesktop.org/doc/dbus-specification.html).
"""

import os
import socket
import struct
import time

MAX_MESSAGE = 16 << 20  # bytes of one message: a large program's whole cache fits
MAX_DEPTH = 64  # nesting of containers and variants (the specification's is 64 in all)
MAX_STRAY = 10000  # messages not awaited (signals, calls to us) read while waiting for replies

METHOD_CALL, METHOD_RETURN, ERROR, SIGNAL = 1, 2, 3, 4
NO_REPLY_EXPECTED = 0x1
F_PATH, F_INTERFACE, F_MEMBER, F_ERROR_NAME, F_REPLY_SERIAL, F_DESTINATION, F_SENDER, F_SIGNATURE = range(1, 9)

FIXED = {"y": ("B", 1), "b": ("I", 4), "n": ("h", 2), "q": ("H", 2), "i": ("i", 4), "u": ("I", 4),
         "x": ("q", 8), "t": ("Q", 8), "d": ("d", 8), "h": ("I", 4)}
ALIGN = dict({k: v[1] for k, v in FIXED.items()}, s=4, o=4, g=1, a=4, v=1, **{"(": 8, "{": 8})


class Error(Exception):
    """A failed call, a broken bus, or a message this client will not read."""


class Timeout(Error):
    """The bus or a peer did not answer in time."""


class CallError(Error):
    """The peer answered a call with a D-Bus error."""

    def __init__(self, name, message):
        super().__init__("%s: %s" % (name, message) if message else name)
        self.name = name


class ObjectPath(str):
    """A string marshalled as an object path (o)."""


class Signature(str):
    """A string marshalled as a signature (g)."""


class Variant:
    """A value marshalled as a variant, with its signature."""

    def __init__(self, signature, value):
        self.signature, self.value = signature, value


def split_types(sig):
    """The complete types of a signature, in order."""
    out, i = [], 0
    while i < len(sig):
        j = _type_end(sig, i)
        out.append(sig[i:j])
        i = j
    return out


def _type_end(sig, i, depth=0):
    if depth > MAX_DEPTH:
        raise Error("signature nested too deep")
    if i >= len(sig):
        raise Error("incomplete signature %r" % sig)
    c = sig[i]
    if c == "a":
        return _type_end(sig, i + 1, depth + 1)
    if c in "({":
        close = ")" if c == "(" else "}"
        j = i + 1
        while j < len(sig) and sig[j] != close:
            j = _type_end(sig, j, depth + 1)
        if j >= len(sig):
            raise Error("unclosed %r in signature %r" % (c, sig))
        return j + 1
    if c in FIXED or c in "sogv":
        return i + 1
    raise Error("unknown type %r in signature %r" % (c, sig))


class Writer:
    """Marshals values in little-endian order."""

    def __init__(self):
        self.buf = bytearray()

    def pad(self, n):
        self.buf += b"\0" * (-len(self.buf) % n)

    def write(self, t, v, depth=0):
        if depth > MAX_DEPTH:
            raise Error("value nested too deep")
        c = t[0]
        self.pad(ALIGN[c])
        if c in FIXED:
            self.buf += struct.pack("<" + FIXED[c][0], int(v))
        elif c in "so":
            data = v.encode()
            self.buf += struct.pack("<I", len(data)) + data + b"\0"
        elif c == "g":
            data = v.encode()
            self.buf += bytes([len(data)]) + data + b"\0"
        elif c == "v":
            self.write("g", v.signature)
            self.write(v.signature, v.value, depth + 1)
        elif c == "a":
            self._array(t[1:], v, depth)
        else:  # a struct or a dict entry
            for st, sv in zip(split_types(t[1:-1]), v):
                self.write(st, sv, depth + 1)

    def _array(self, elem, v, depth):
        at = len(self.buf)
        self.buf += b"\0\0\0\0"
        self.pad(ALIGN[elem[0]])
        start = len(self.buf)
        items = v.items() if elem[0] == "{" else v
        for item in items:
            self.write(elem, item, depth + 1)
        struct.pack_into("<I", self.buf, at, len(self.buf) - start)


class Reader:
    """Unmarshals values, every length and offset checked against the data."""

    def __init__(self, data, little=True, pos=0):
        self.data, self.pos, self.end = data, pos, "<" if little else ">"

    def align(self, n):
        self.pos += -self.pos % n
        if self.pos > len(self.data):
            raise Error("message ends inside its padding")

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise Error("message ends inside a value")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def read(self, t, depth=0):
        if depth > MAX_DEPTH:
            raise Error("value nested too deep")
        c = t[0]
        self.align(ALIGN[c])
        if c in FIXED:
            fmt, size = FIXED[c]
            v = struct.unpack(self.end + fmt, self.take(size))[0]
            return bool(v) if c == "b" else v
        if c in "so":
            n = struct.unpack(self.end + "I", self.take(4))[0]
            s = self.take(n + 1)[:-1].decode("utf-8", "replace")
            return ObjectPath(s) if c == "o" else s
        if c == "g":
            return Signature(self.take(self.take(1)[0] + 1)[:-1].decode("ascii", "replace"))
        if c == "v":
            sig = self.read("g")
            if len(split_types(sig)) != 1:
                raise Error("a variant holds one complete type, not %r" % sig)
            return self.read(sig, depth + 1)
        if c == "a":
            return self._array(t[1:], depth)
        return tuple(self.read(st, depth + 1) for st in split_types(t[1:-1]))

    def _array(self, elem, depth):
        n = struct.unpack(self.end + "I", self.take(4))[0]
        self.align(ALIGN[elem[0]])
        stop = self.pos + n
        if stop > len(self.data):
            raise Error("an array reaches past its message")
        out = []
        while self.pos < stop:
            out.append(self.read(elem, depth + 1))
        if self.pos != stop:
            raise Error("an array's elements overrun its length")
        return dict(out) if elem[0] == "{" else out


def marshal(kind, serial, fields, signature="", args=(), flags=0):
    """A whole message: its header, the fields (code: (type, value)) and
    the body of args of the signature."""
    body = Writer()
    for t, v in zip(split_types(signature), args):
        body.write(t, v)
    if signature:
        fields = dict(fields)
        fields[F_SIGNATURE] = ("g", Signature(signature))
    head = Writer()
    head.buf += b"l" + bytes([kind, flags, 1]) + struct.pack("<II", len(body.buf), serial)
    head.write("a(yv)", [(code, Variant(t, v)) for code, (t, v) in sorted(fields.items())])
    head.pad(8)
    return bytes(head.buf + body.buf)


class Message:
    def __init__(self, kind, flags, serial, fields, body):
        self.kind, self.flags, self.serial, self.fields, self.body = kind, flags, serial, fields, body


def parse_header(fixed):
    """From a message's first 16 bytes: whether it is little-endian and its
    whole length."""
    if fixed[0:1] not in (b"l", b"B"):
        raise Error("not a D-Bus message (endianness %r)" % fixed[0:1])
    little = fixed[0:1] == b"l"
    body_len, _, fields_len = struct.unpack(("<" if little else ">") + "III", fixed[4:16])
    total = 16 + fields_len + (-fields_len % 8) + body_len
    if total > MAX_MESSAGE:
        raise Error("a message of %d bytes, more than this client reads" % total)
    return little, total


def unmarshal(data):
    little, _ = parse_header(data[:16])
    r = Reader(data, little, 12)
    fields = dict(r.read("a(yv)"))
    r.align(8)
    sig = fields.get(F_SIGNATURE, "")
    body = tuple(r.read(t) for t in split_types(sig))
    if r.pos != len(data):
        raise Error("a message's body does not match its signature")
    kind, flags = data[1], data[2]
    serial = struct.unpack(("<" if little else ">") + "I", data[8:12])[0]
    return Message(kind, flags, serial, fields, body)


class Connection:
    """One connection to a bus. Not safe for more than one thread."""

    def __init__(self, path, peer_uid=None, timeout=2.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.serial = 0
        self.buf = bytearray()
        try:
            self.sock.connect(path)
            if peer_uid is not None:
                self._check_peer(peer_uid)
            self._auth(time.monotonic() + timeout)
            self.name = self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello",
                                  timeout=timeout)[0]
        except BaseException:
            self.sock.close()
            raise

    def _check_peer(self, uid):
        creds = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, peer, _ = struct.unpack("3i", creds)
        if peer != uid:
            raise Error("the bus's socket belongs to uid %d, not the sandbox user's %d" % (peer, uid))

    def _auth(self, deadline):
        uid = str(os.getuid()).encode().hex().encode()
        self.sock.sendall(b"\0AUTH EXTERNAL " + uid + b"\r\n")
        line = self._line(deadline)
        if not line.startswith(b"OK "):
            raise Error("the bus refused authentication: %r" % line[:100])
        self.sock.sendall(b"BEGIN\r\n")

    def _line(self, deadline):
        while b"\r\n" not in self.buf:
            if len(self.buf) > 4096:
                raise Error("the bus's authentication line is too long")
            self._fill(deadline)
        line, _, rest = bytes(self.buf).partition(b"\r\n")
        self.buf = bytearray(rest)
        return line

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("timed out waiting for the bus")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(256 << 10)
        except socket.timeout:
            raise Timeout("timed out waiting for the bus") from None
        if not chunk:
            raise Error("the bus closed the connection")
        self.buf += chunk

    def close(self):
        self.sock.close()

    def send(self, dest, path, iface, member, signature="", args=()):
        """Sends a method call; returns its serial, to await its reply."""
        self.serial += 1
        fields = {F_PATH: ("o", path), F_MEMBER: ("s", member), F_DESTINATION: ("s", dest)}
        if iface:
            fields[F_INTERFACE] = ("s", iface)
        self.sock.sendall(marshal(METHOD_CALL, self.serial, fields, signature, args))
        return self.serial

    def _message(self, deadline):
        while len(self.buf) < 16:
            self._fill(deadline)
        _, total = parse_header(bytes(self.buf[:16]))
        while len(self.buf) < total:
            self._fill(deadline)
        data = bytes(self.buf[:total])
        del self.buf[:total]
        return unmarshal(data)

    def replies(self, serials, timeout):
        """The replies to the calls of serials, by serial: each its body
        (a tuple), or a CallError. Calls not answered by the deadline are
        missing. Other messages are read and dropped."""
        deadline = time.monotonic() + timeout
        want, out, stray = set(serials), {}, 0
        while want:
            try:
                m = self._message(deadline)
            except Timeout:
                break
            reply_to = m.fields.get(F_REPLY_SERIAL)
            if m.kind in (METHOD_RETURN, ERROR) and reply_to in want:
                want.discard(reply_to)
                if m.kind == ERROR:
                    text = m.body[0] if m.body and isinstance(m.body[0], str) else ""
                    out[reply_to] = CallError(m.fields.get(F_ERROR_NAME, "error"), text)
                else:
                    out[reply_to] = m.body
                continue
            stray += 1
            if stray > MAX_STRAY:
                raise Error("the bus sent too many messages that answer nothing")
        return out

    def call(self, dest, path, iface, member, signature="", args=(), timeout=2.0):
        serial = self.send(dest, path, iface, member, signature, args)
        got = self.replies([serial], timeout).get(serial)
        if got is None:
            raise Error("%s.%s on %s did not answer within %g s" % (iface, member, dest, timeout))
        if isinstance(got, CallError):
            raise got
        return got
