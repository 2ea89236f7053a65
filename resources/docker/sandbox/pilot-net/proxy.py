"""pilot-sandbox network proxy (docs/network.md).

Runs in a helper container of the sidecar (the desktop image, never the
project's own) that shares the sandbox's network namespace: as root with
NET_ADMIN it loads the egress rules (ruleset.nft), then drops to pilot-net
(uid 1002) with no capability left, binds its ports and reads the sandbox's
connections. The rules send the sandbox's DNS to 127.0.0.1:15053 and
every other TCP connection to 127.0.0.1:15001; programs that honour
HTTP_PROXY use 127.0.0.1:15080.

It decides nothing. For each connection it reads what names the client
gives (the TLS ClientHello's SNI, the HTTP Host) within a short bounded
wait, asks the sidecar over its stdin and stdout (one JSON object a line,
each at most MAX_LINE bytes), holds the connection until the answer, then
dials exactly the address the sidecar names and joins the two. DNS queries
go to the sidecar as they are, and its answers back. A denied connection
fails at once, saying why where its protocol can: HTTP gets a 403, SSH a
disconnect message, TLS and the rest a reset.

It ends when its stdin ends (the sidecar let go); the redirected
connections are then refused, so the sandbox has no way out without it.
Only Python's standard library.
"""

import base64
import errno
import fcntl
import ipaddress
import itertools
import json
import os
import queue
import select
import socket
import struct
import subprocess
import sys
import threading
import time

LOCAL = "127.0.0.1"
TRANSPARENT_PORT = 15001
DNS_PORT = 15053
HTTP_PORT = 15080
NET_UID = 1002  # pilot-net: the rules let its connections out
RULESET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ruleset.nft")

MAX_LINE = 64 * 1024  # one channel message, either way
MAX_HELD = 512  # TCP connections held or joined at once; more are reset
MAX_DNS_PENDING = 256  # UDP queries waiting for the sidecar; more are dropped
PEEK_BYTES = 16 * 1024  # what is read of a client's first bytes for its names
PEEK_WAIT = 0.03  # seconds a silent client gets before it is judged without names
LATE_WAIT = 2.0  # seconds a started ClientHello or HTTP head gets to complete
HEAD_WAIT = 10.0  # seconds a client of the explicit proxy has to send its request
DIAL_WAIT = 10.0  # seconds to connect to the destination
DNS_WAIT = 10.0  # seconds a DNS query waits for the sidecar
HELD_GRACE = 0.2  # seconds held connections get to hear why, at the end
PIPE_SIZE = 256 << 10  # splice's pipe: larger moves more per system call
SO_ORIGINAL_DST = 80

HTTP_METHODS = (b"GET ", b"POST ", b"HEAD ", b"PUT ", b"DELETE ", b"OPTIONS ",
                b"PATCH ", b"CONNECT ", b"TRACE ")
HOP_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


class Channel:
    """The conversation with the sidecar: requests out on stdout, answers in
    on stdin, matched by id. A waiter that gets no answer before the channel
    closes gets None."""

    def __init__(self, out):
        self.out = out
        self.lock = threading.Lock()  # guards writes to out, and waiters
        self.waiters = {}
        self.ids = itertools.count(1)
        self.closed = False

    def send(self, msg):
        line = json.dumps(msg, separators=(",", ":")).encode() + b"\n"
        if len(line) > MAX_LINE:
            raise ValueError("message too long")
        with self.lock:
            try:
                self.out.write(line)
                self.out.flush()
            except OSError:
                os._exit(0)  # the sidecar is gone: so is the way out

    def ask(self, msg, timeout=None):
        """Sends msg with a new id and waits for the answer to it."""
        ev = threading.Event()
        slot = [ev, None]
        msg["id"] = next(self.ids)
        with self.lock:
            if self.closed:
                return None
            self.waiters[msg["id"]] = slot
        try:
            self.send(msg)
            ev.wait(timeout)
        finally:
            with self.lock:
                self.waiters.pop(msg["id"], None)
        return slot[1]

    def ask_later(self, msg, then):
        """Sends msg with a new id; the reading thread calls then(answer)
        when it comes (and then(None) if the channel closes first)."""
        msg["id"] = next(self.ids)
        with self.lock:
            if self.closed:
                return
            self.waiters[msg["id"]] = then
        self.send(msg)

    def answer(self, msg):
        with self.lock:
            slot = self.waiters.pop(msg.get("id"), None)
        if callable(slot):
            slot(msg)
        elif slot is not None:
            slot[1] = msg
            slot[0].set()

    def close(self):
        with self.lock:
            self.closed = True
            slots = list(self.waiters.values())
            self.waiters.clear()
        for slot in slots:
            if callable(slot):
                slot(None)
            else:
                slot[0].set()

    def read(self, inp):
        """Reads answers until inp ends."""
        while True:
            line = inp.readline(MAX_LINE + 1)
            if not line:
                return
            if len(line) > MAX_LINE:
                raise ValueError("a message from the sidecar is too long")
            self.answer(json.loads(line))


def tls_server_name(data):
    """Reads a TLS ClientHello from the first bytes of a connection.

    Returns (state, name): state is "tls" (name is its SNI, or None when it
    has none), "more" (a ClientHello has begun but is not complete yet) or
    "other" (not TLS)."""
    hs = b""
    pos = 0
    while len(hs) < 4 or len(hs) < 4 + int.from_bytes(hs[1:4], "big"):
        if len(data) < pos + 5:
            return ("more", None) if data[:1] in (b"", b"\x16") else ("other", None)
        if data[pos] != 0x16 or data[pos + 1] != 3:
            return "other", None
        n = int.from_bytes(data[pos + 3:pos + 5], "big")
        if len(data) < pos + 5 + n:
            return "more", None
        hs += data[pos + 5:pos + 5 + n]
        pos += 5 + n
        if hs[:1] != b"\x01":
            return "other", None
    try:
        return "tls", _sni(hs[4:4 + int.from_bytes(hs[1:4], "big")])
    except (IndexError, ValueError):
        return "tls", None


def _sni(body):
    p = 2 + 32  # version, random
    p += 1 + body[p]  # session id
    p += 2 + int.from_bytes(body[p:p + 2], "big")  # cipher suites
    p += 1 + body[p]  # compression methods
    end = p + 2 + int.from_bytes(body[p:p + 2], "big")
    p += 2
    while p + 4 <= end:
        kind = int.from_bytes(body[p:p + 2], "big")
        n = int.from_bytes(body[p + 2:p + 4], "big")
        ext = body[p + 4:p + 4 + n]
        p += 4 + n
        if kind != 0:
            continue
        q = 2
        while q + 3 <= len(ext):
            name_type, ln = ext[q], int.from_bytes(ext[q + 1:q + 3], "big")
            if name_type == 0:
                return ext[q + 3:q + 3 + ln][:255].decode("latin-1")
            q += 3 + ln
    return None


def http_head(data):
    """Splits an HTTP/1 request head from the first bytes of a connection.

    Returns (state, head): state is "http" (head is (method, target,
    version, [(name, value)], rest)), "more" or "other"."""
    if not any(data.startswith(m) or m.startswith(data) for m in HTTP_METHODS):
        return "other", None
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return ("other" if len(data) >= PEEK_BYTES else "more"), None
    lines = data[:end].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        return "other", None
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            return "other", None
        headers.append((name.strip(), value.strip()))
    return "http", (parts[0], parts[1], parts[2], headers, data[end + 4:])


def header(headers, name):
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def host_of(authority, default_port):
    """Splits "host[:port]" (IPv6 in brackets) into (host, port)."""
    text = authority.decode("latin-1")
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    else:
        host, port = text, ""
    if not port:
        return host.lower().rstrip("."), default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("bad port")
    return host.lower().rstrip("."), int(port)


def kind_of(data):
    """What a client's first bytes are: ("tls"|"http"|"ssh"|"other"|"more", names)."""
    state, name = tls_server_name(data)
    if state == "tls":
        return "tls", [name] if name else []
    if state == "more":
        return "more", []
    if data.startswith(b"SSH-") or (data and b"SSH-".startswith(data)):
        return ("ssh" if len(data) >= 4 else "more"), []
    state, head = http_head(data)
    if state == "http":
        host = header(head[3], b"host")
        try:
            return "http", [host_of(host, 80)[0]] if host else []
        except ValueError:
            return "http", []
    return state, []


def read_first(sock, wait, data=b""):
    """Reads a client's first bytes until they say what they are, PEEK_BYTES
    arrive, the client is silent for wait seconds (None: no bound), or a
    started ClientHello or head takes LATE_WAIT. Returns (data, kind,
    names, ended)."""
    now = time.monotonic()
    deadline = None if wait is None else now + wait
    kind, names = kind_of(data) if data else ("more", [])
    started = bool(data)
    poller = select.poll()  # not select(): descriptors pass FD_SETSIZE here
    poller.register(sock, select.POLLIN)
    while kind == "more" and len(data) < PEEK_BYTES:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        if not poller.poll(None if left is None else left * 1000):
            break
        chunk = sock.recv(PEEK_BYTES - len(data))
        if not chunk:
            return (data, *kind_of(data), True)
        data += chunk
        kind, names = kind_of(data)
        if not started:
            started = True  # it began: give it time to finish
            deadline = max(deadline or 0, time.monotonic() + LATE_WAIT)
    return data, kind, names, False


def failed(status, reason):
    """An HTTP response whose status line and one-line body carry the reason."""
    line = reason.encode("ascii", "replace")[:400].replace(b"\r", b" ").replace(b"\n", b" ")
    body = line + b"\n"
    return (b"HTTP/1.1 %d " % status + line + b"\r\nContent-Type: text/plain\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


def ssh_disconnect(reason):
    """An SSH server's version line, then SSH_MSG_DISCONNECT (RFC 4253 11.1)
    in the clear, before any key exchange: OpenSSH shows its description
    ("Received disconnect from ...: REASON"), and git passes that on."""
    text = reason.encode("utf-8")[:400]
    payload = bytes([1]) + struct.pack(">I", 2) + struct.pack(">I", len(text)) + text + struct.pack(">I", 0)
    pad = 8 - (len(payload) + 5) % 8
    if pad < 4:
        pad += 8
    packet = struct.pack(">IB", len(payload) + pad + 1, pad) + payload + bytes(pad)
    return b"SSH-2.0-pilot-sandbox\r\n" + packet


def reset(sock):
    """Closes a connection with a reset, so the client fails at once."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def pump(src, dst, counts, key):
    """Moves src's bytes to dst until src ends, then half-closes dst. A failure
    shuts both down, so the other direction ends too."""
    r = w = None
    try:
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, PIPE_SIZE)  # F_SETPIPE_SZ
        except OSError:
            pass
        while True:
            n = os.splice(src.fileno(), w, PIPE_SIZE)
            if n == 0:
                break
            while n:
                m = os.splice(r, dst.fileno(), n)
                n -= m
                counts[key] += m
        if not counts.get("cut"):
            dst.shutdown(socket.SHUT_WR)
    except OSError:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
    finally:
        for fd in (r, w):
            if fd is not None:
                os.close(fd)


class Workers:
    """Threads kept and reused: starting one per connection cost about a
    millisecond under load (measured with BenchmarkPath). Daemon threads,
    unlike concurrent.futures', so a process whose connections still run
    can end."""

    def __init__(self, limit):
        self.jobs = queue.SimpleQueue()
        self.lock = threading.Lock()  # guards idle and count
        self.idle = 0
        self.count = 0
        self.limit = limit

    def submit(self, fn, *args):
        """Runs fn(*args) on a free thread; the event it returns is set when
        fn has returned. RuntimeError when every thread is busy."""
        finished = threading.Event()
        with self.lock:
            if self.idle:
                self.idle -= 1
            elif self.count < self.limit:
                self.count += 1
                threading.Thread(target=self.work, daemon=True).start()
            else:
                raise RuntimeError("no thread free")
        self.jobs.put((fn, args, finished))
        return finished

    def work(self):
        while True:
            fn, args, finished = self.jobs.get()
            try:
                fn(*args)
            except Exception:  # the job's own failure: the thread goes on
                pass
            finally:
                finished.set()
            with self.lock:
                self.idle += 1


class Proxy:
    """The proxy's listeners and what it does with each connection."""

    def __init__(self, channel, original_dst=None, dial=None):
        self.channel = channel
        self.original_dst = original_dst or _original_dst
        self.dial = dial or dial_first
        self.held = threading.BoundedSemaphore(MAX_HELD)
        # Two threads for each connection: its handler, and the pump of
        # the server's side.
        self.pool = Workers(2 * MAX_HELD + 4)
        self.dns_pending = threading.BoundedSemaphore(MAX_DNS_PENDING)
        self.listeners = {}

    # The listeners.

    def bind(self, host=LOCAL, ports=(TRANSPARENT_PORT, DNS_PORT, HTTP_PORT)):
        """Binds the ports, or raises OSError naming who holds one."""
        tp, dp, hp = ports
        self.listeners["transparent"] = _listen(socket.SOCK_STREAM, host, tp)
        self.listeners["dns_udp"] = _listen(socket.SOCK_DGRAM, host, dp)
        self.listeners["dns_tcp"] = _listen(socket.SOCK_STREAM, host, dp)
        self.listeners["http"] = _listen(socket.SOCK_STREAM, host, hp)

    def serve(self):
        """Starts a thread for each listener."""
        for name, handler in (("transparent", self.transparent), ("dns_tcp", self.dns_tcp),
                              ("http", self.explicit)):
            threading.Thread(target=self.accept, args=(self.listeners[name], handler), daemon=True).start()
        threading.Thread(target=self.dns_udp, daemon=True).start()

    def accept(self, listener, handler):
        while True:
            try:
                conn, addr = listener.accept()
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    time.sleep(0.05)
                    continue
                return
            if not self.held.acquire(blocking=False):
                reset(conn)
                continue
            try:
                self.pool.submit(self.handle, handler, conn, addr)
            except RuntimeError:
                self.held.release()
                reset(conn)

    def handle(self, handler, conn, addr):
        try:
            handler(conn, addr)
        except Exception:  # a hostile client must not end the proxy
            reset(conn)
        finally:
            self.held.release()

    # Connections.

    def transparent(self, conn, addr):
        dst, port = self.original_dst(conn)
        if (dst, port) in {(LOCAL, p) for p in (TRANSPARENT_PORT, DNS_PORT, HTTP_PORT)} or \
                conn.getsockname() == (dst, port):
            reset(conn)  # to the listener itself: there is nowhere to go
            return
        data, kind, names, _ = read_first(conn, PEEK_WAIT)
        self.carry(conn, {"via": "transparent", "dst": dst, "port": port, "src": addr[1],
                          "kind": kind, "names": names}, data)

    def explicit(self, conn, addr):
        """The explicit proxy: CONNECT host:port, or a request for an
        absolute http:// URL."""
        data, kind, _, ended = read_first(conn, HEAD_WAIT)
        state, head = http_head(data)
        if state != "http":
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        method, target, version, headers, rest = head
        try:
            if method == b"CONNECT":
                host, port = host_of(target, 443)
                first = b""
            elif target.lower().startswith(b"http://"):
                authority, _, path = target[7:].partition(b"/")
                host, port = host_of(authority, 80)
                first = origin_request(method, b"/" + path, version, headers, rest)
            else:
                raise ValueError("not a proxy request")
        except ValueError:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        req = {"via": "http", "port": port, "src": addr[1], "kind": "http", "dst": "", "names": []}
        if _is_ip(host):
            req["dst"] = host
        else:
            req["names"] = [host]
        if method != b"CONNECT":
            named = header(headers, b"host")
            if named:
                try:
                    req["names"] = sorted(set(req["names"] + [host_of(named, 80)[0]]))
                except ValueError:
                    pass
            self.carry(conn, req, first, http=True)
        else:
            self.carry(conn, req, b"", http=True, tunnel=True)

    def carry(self, conn, req, first, http=False, tunnel=False):
        """Asks the sidecar about req; then joins conn to the address it
        names, or fails conn the way its protocol understands."""
        verdict = self.channel.ask({"t": "conn", **req})
        if not verdict or not verdict.get("allow"):
            deny(conn, req, verdict, http)
            return
        try:
            upstream = self.dial(verdict["dial"], req["port"])
            upstream.settimeout(None)
        except (OSError, KeyError) as e:
            self.channel.send({"t": "done", "id": verdict["id"], "up": 0, "down": 0, "error": str(e)[:200]})
            if http:
                conn.sendall(failed(502, "pilot-sandbox could not reach %s: %s" % (label(req), e)))
                conn.close()
            else:
                reset(conn)
            return
        counts = {"up": 0, "down": 0}
        try:
            if tunnel:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            conn.settimeout(None)
            # The server's side flows at once: a protocol where the server
            # speaks first must not wait for the client's first bytes.
            down = self.pool.submit(pump, upstream, conn, counts, "down")
            refused = self.judged_first(conn, upstream, req, first, verdict, counts, inspect=tunnel or req["kind"] == "more")
            if not refused:
                pump(conn, upstream, counts, "up")
            down.wait()
            if refused:
                deny(conn, *refused)
        finally:
            conn.close()
            upstream.close()
            self.channel.send({"t": "done", "id": verdict["id"], "up": counts["up"], "down": counts["down"]})

    def judged_first(self, conn, upstream, req, first, verdict, counts, inspect):
        """Sends the client's first bytes on, once they are judged. A name in
        them that was not judged yet (a ClientHello or Host that came after
        the wait, or one inside a CONNECT tunnel) is asked about first: every
        name a connection gives must be allowed. When one is not, the
        server's side is cut and (req, verdict, http) for deny returned."""
        data = first
        if inspect:
            data, kind, names, _ = read_first(conn, None, first)
            if set(names) - set(req["names"]):
                again = self.channel.ask({"t": "conn", **req, "kind": kind, "of": verdict["id"],
                                          "names": sorted(set(names) | set(req["names"]))})
                if not again or not again.get("allow"):
                    counts["cut"] = True  # the client hears the reason, not an end
                    upstream.shutdown(socket.SHUT_RDWR)
                    return {**req, "kind": kind}, again, False
        if data:
            upstream.sendall(data)
            counts["up"] += len(data)
        return None

    # DNS.

    def dns_udp(self):
        sock = self.listeners["dns_udp"]
        while True:
            try:
                query, addr = sock.recvfrom(4096)
            except OSError:
                return
            if not self.dns_pending.acquire(blocking=False):
                continue  # the client will ask again
            # No thread per query: the channel's reader sends the answer.
            self.channel.ask_later({"t": "dns", "proto": "udp", "q": base64.b64encode(query).decode()},
                                   lambda msg, addr=addr: self.dns_answered(sock, addr, msg))

    def dns_answered(self, sock, addr, msg):
        self.dns_pending.release()
        if msg and msg.get("a"):
            try:
                sock.sendto(base64.b64decode(msg["a"]), addr)
            except OSError:
                pass

    def dns_tcp(self, conn, addr):
        conn.settimeout(DNS_WAIT)
        try:
            while True:
                n = _read_exactly(conn, 2)
                if not n:
                    return
                size = int.from_bytes(n, "big")
                if size > 4096:
                    return
                query = _read_exactly(conn, size)
                if not query:
                    return
                answer = self.resolve(query, "tcp")
                if not answer:
                    return
                conn.sendall(len(answer).to_bytes(2, "big") + answer)
        except OSError:
            pass
        finally:
            conn.close()

    def resolve(self, query, proto):
        msg = self.channel.ask({"t": "dns", "proto": proto, "q": base64.b64encode(query).decode()}, DNS_WAIT)
        if not msg or "a" not in msg:
            return None
        return base64.b64decode(msg["a"])


def dial_first(addrs, port):
    """Connects to the first of the addresses the sidecar named that
    answers, in its order, never to anything else."""
    err = OSError("no address to dial")
    for addr in addrs[:8]:
        try:
            return socket.create_connection((addr, port), timeout=DIAL_WAIT)
        except OSError as e:
            err = e
    raise err


def origin_request(method, path, version, headers, rest):
    """The request for the origin server: its path alone, no hop-by-hop
    headers, and one request a connection (each request is judged)."""
    lines = [method + b" " + path + b" " + version]
    lines += [k + b": " + v for k, v in headers if k.lower() not in HOP_HEADERS]
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + rest


def label(req):
    names = req.get("names") or []
    return "%s:%s" % (names[0] if names else req.get("dst", "?"), req.get("port"))


def deny(conn, req, verdict, http):
    reason = (verdict or {}).get("reason") or (
        "pilot-sandbox blocked %s: no pilot-sandbox process carries this sandbox's network now" % label(req))
    try:
        if http or req.get("kind") == "http":
            conn.sendall(failed(403, reason))
            conn.close()
            return
        if req.get("kind") == "ssh":
            conn.sendall(ssh_disconnect(reason))
            conn.close()
            return
    except OSError:
        pass
    reset(conn)


def _is_ip(host):
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _read_exactly(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _original_dst(conn):
    raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, ip = struct.unpack("!2xH4s8x", raw)
    return socket.inet_ntoa(ip), port


def _listen(kind, host, port):
    sock = socket.socket(socket.AF_INET, kind)
    if kind == socket.SOCK_STREAM:
        # A former proxy's connections in TIME_WAIT must not keep this one
        # out; a program listening on the port still does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise OSError(e.errno, port_holder(kind, port)) from None
        raise
    if kind == socket.SOCK_STREAM:
        sock.listen(1024)
    return sock


def port_holder(kind, port, proc="/proc/net"):
    """Says who holds a port in this network namespace: another proxy (a
    pilot-sandbox process carries the sandbox already), or a program of
    the sandbox that took it first."""
    table = "tcp" if kind == socket.SOCK_STREAM else "udp"
    try:
        with open(os.path.join(proc, table)) as f:
            rows = f.read().splitlines()[1:]
    except OSError:
        rows = []
    for row in rows:
        cols = row.split()
        if len(cols) < 8 or int(cols[1].rsplit(":", 1)[1], 16) != port:
            continue
        if table == "tcp" and cols[3] != "0A":
            continue
        if int(cols[7]) == NET_UID:
            return "in use: another pilot-sandbox process carries this sandbox's network"
        return "port %d/%s is held by uid %s in the sandbox" % (port, table, cols[7])
    return "port %d/%s is in use" % (port, table)


def load_rules(path=RULESET):
    res = subprocess.run(["nft", "-f", path], capture_output=True, timeout=20)
    if res.returncode != 0:
        raise RuntimeError("nft: " + res.stderr.decode(errors="replace").strip()[-500:])


def drop_privileges(uid=NET_UID):
    """Becomes pilot-net, which keeps no capability (a set-user-ID to a
    non-root user clears them), and checks that it did."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    if status["CapEff"].strip().strip("0") or status["CapPrm"].strip().strip("0"):
        raise RuntimeError("capabilities left after dropping to uid %d" % uid)


def main():
    out = sys.stdout.buffer
    channel = Channel(out)
    threading.stack_size(256 * 1024)
    proxy = Proxy(channel)
    try:
        if "--no-rules" not in sys.argv:
            load_rules()
        if os.getuid() == 0:
            drop_privileges()
        # As pilot-net: its sockets say so in /proc/net/tcp, which is how
        # the next proxy tells another proxy from a squatter (port_holder).
        proxy.bind()
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        channel.send({"t": "error", "error": getattr(e, "strerror", None) or str(e)})
        sys.exit(1)
    proxy.serve()
    channel.send({"t": "ready", "pid": os.getpid()})
    try:
        channel.read(sys.stdin.buffer)
    except ValueError as e:
        print("pilot-net: %s" % e, file=sys.stderr)
    # The sidecar let go: the connections it was judging hear so (a 403, an
    # SSH disconnect or a reset), then all end with the process.
    channel.close()
    time.sleep(HELD_GRACE)
    os._exit(0)


if __name__ == "__main__":
    main()
