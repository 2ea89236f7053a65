"""A small client of Chromium's DevTools Protocol, in Python's standard
library: one WebSocket to the browser, commands sent in a batch and their
answers read as they come (a page's node bounds cost one round trip, not
one per node), sessions on page targets (Target.attachToTarget, flatten).

Chromium runs as the sandbox user, and its DevTools port (127.0.0.1:9222,
resources/docker/browser/pilot-open.sh) answers anyone in the container:
what it says is hostile input to the desktop agent that reads it, so a
message's size, the messages read while waiting, and the time are bounded.
"""

import base64
import json
import os
import socket
import struct
import time

PORT = 9222
MAX_MESSAGE = 32 << 20  # bytes of one message: the accessibility tree of a very large page
MAX_STRAY = 20000  # events and stale answers read while waiting for answers
MAX_HEADER = 16 << 10


class Error(Exception):
    """The browser did not answer, answered something this client will not
    read, or refused a command."""


class Timeout(Error):
    pass


class CommandError(Error):
    """A command the browser answered with an error."""


class Browser:
    """One WebSocket connection to the browser's DevTools endpoint."""

    def __init__(self, port=PORT, timeout=2.0):
        self.deadline_default = timeout
        path = self._browser_path(port, timeout)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = bytearray()
        self.next_id = 0
        try:
            self._handshake(path, port, time.monotonic() + timeout)
        except BaseException:
            self.sock.close()
            raise

    @staticmethod
    def _browser_path(port, timeout):
        """The browser's WebSocket path, from /json/version."""
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            data, deadline = bytearray(), time.monotonic() + timeout
            while not _whole_response(data):
                if len(data) > 64 << 10:
                    raise Error("the DevTools port's /json/version is too long")
                s.settimeout(max(0.001, deadline - time.monotonic()))
                try:
                    chunk = s.recv(16 << 10)
                except socket.timeout:
                    raise Timeout("the DevTools port did not answer in time") from None
                if not chunk:
                    break
                data += chunk
        head, _, body = bytes(data).partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise Error("the DevTools port answered %r" % head[:60])
        try:
            url = json.loads(body)["webSocketDebuggerUrl"]
        except (ValueError, KeyError, TypeError):
            raise Error("the DevTools port's /json/version names no browser endpoint") from None
        path = url[url.find("/devtools/"):] if "/devtools/" in url else ""
        if not path.startswith("/devtools/browser/") or any(c in path for c in "\r\n "):
            raise Error("the DevTools port's endpoint is not a browser's: %r" % url[:100])
        return path

    def _handshake(self, path, port, deadline):
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, port, key)).encode())
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > MAX_HEADER:
                raise Error("the DevTools port's handshake is too long")
            self._fill(deadline)
        head, _, rest = bytes(self.buf).partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise Error("the DevTools port refused the WebSocket: %r" % head[:60])
        self.buf = bytearray(rest)

    def close(self):
        try:
            self.sock.sendall(_frame(0x8, b""))
        except OSError:
            pass
        self.sock.close()

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("the browser did not answer in time")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 20)
        except socket.timeout:
            raise Timeout("the browser did not answer in time") from None
        if not chunk:
            raise Error("the browser closed the connection")
        self.buf += chunk

    def _need(self, n, deadline):
        while len(self.buf) < n:
            self._fill(deadline)

    def _message(self, deadline):
        """The next whole text message, its fragments joined."""
        parts, size = [], 0
        while True:
            self._need(2, deadline)
            b0, b1 = self.buf[0], self.buf[1]
            n, at = b1 & 0x7F, 2
            if n == 126:
                self._need(4, deadline)
                n, at = struct.unpack(">H", self.buf[2:4])[0], 4
            elif n == 127:
                self._need(10, deadline)
                n, at = struct.unpack(">Q", self.buf[2:10])[0], 10
            if b1 & 0x80:
                raise Error("the browser sent a masked frame")
            size += n
            if size > MAX_MESSAGE:
                raise Error("the browser sent a message of more than %d MiB" % (MAX_MESSAGE >> 20))
            self._need(at + n, deadline)
            payload = bytes(self.buf[at:at + n])
            del self.buf[:at + n]
            op = b0 & 0x0F
            if op == 0x9:  # ping
                self.sock.sendall(_frame(0xA, payload))
                continue
            if op == 0x8:
                raise Error("the browser closed the connection")
            if op in (0x1, 0x2, 0x0):
                parts.append(payload)
                if b0 & 0x80:
                    return b"".join(parts)

    def send(self, method, params=None, session=None):
        """Sends a command; returns its id, to await its answer."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.sock.sendall(_frame(0x1, json.dumps(msg).encode()))
        return self.next_id

    def answers(self, ids, timeout=None):
        """The answers to the commands of ids, by id: each its result (a
        dict) or a CommandError. Commands not answered in time are missing."""
        deadline = time.monotonic() + (timeout or self.deadline_default)
        want, out, stray = set(ids), {}, 0
        while want:
            try:
                raw = self._message(deadline)
            except Timeout:
                break
            try:
                msg = json.loads(raw)
            except ValueError:
                raise Error("the browser sent a message that is not JSON") from None
            mid = msg.get("id") if isinstance(msg, dict) else None
            if mid in want:
                want.discard(mid)
                err = msg.get("error")
                if err is not None:
                    out[mid] = CommandError(err.get("message", "error") if isinstance(err, dict) else str(err))
                else:
                    result = msg.get("result")
                    out[mid] = result if isinstance(result, dict) else {}
                continue
            stray += 1
            if stray > MAX_STRAY:
                raise Error("the browser sent too many messages that answer nothing")
        return out

    def call(self, method, params=None, session=None, timeout=None):
        mid = self.send(method, params, session)
        got = self.answers([mid], timeout).get(mid)
        if got is None:
            raise Timeout("the browser did not answer %s in time" % method)
        if isinstance(got, CommandError):
            raise got
        return got

    def batch(self, commands, session=None, timeout=None):
        """Sends every (method, params) and returns their answers in order:
        a result, a CommandError, or None for one not answered in time."""
        ids = [self.send(m, p, session) for m, p in commands]
        got = self.answers(ids, timeout)
        return [got.get(i) for i in ids]


def _whole_response(data):
    """Whether data holds an HTTP response's head and its Content-Length of
    body (Chromium keeps the connection open after it)."""
    head, sep, body = bytes(data).partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return value.strip().isdigit() and len(body) >= int(value.strip())
    return False


def _frame(op, payload):
    """A client's frame: final, masked (RFC 6455 requires clients to mask)."""
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack(">BB", 0x80 | op, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack(">BBH", 0x80 | op, 0x80 | 126, n)
    else:
        head = struct.pack(">BBQ", 0x80 | op, 0x80 | 127, n)
    key = (mask * (n // 4 + 1))[:n]
    masked = (int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")).to_bytes(n, "little")
    return head + mask + masked
