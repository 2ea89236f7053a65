"""Tests of the network proxy (resources/docker/sandbox/pilot-net/proxy.py)
that need no rules, no root and no container: its parsers, its answers to
denied clients, its channel, and its listeners end to end on this
machine's loopback against a fake sidecar.

    cd resources/pilotnet && python3 -m unittest -v

resources/netproxy_test.go runs them in the sandbox image too.
"""

import base64
import io
import json
import os
import socket
import ssl
import struct
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("PILOT_NET_DIR", os.path.join(HERE, "..", "docker", "sandbox", "pilot-net")))

import proxy  # noqa: E402


def client_hello(name):
    """The first flight of a real TLS client asking for name."""
    ctx = ssl.create_default_context()
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inc, out, server_hostname=name)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


class ParseTest(unittest.TestCase):
    def test_sni_of_a_real_client_hello(self):
        self.assertEqual(proxy.tls_server_name(client_hello("example.org")), ("tls", "example.org"))

    def test_sni_across_two_records(self):
        hello = client_hello("split.example")
        body = hello[5:]
        half = len(body) // 2
        two = (b"\x16\x03\x01" + struct.pack(">H", half) + body[:half]
               + b"\x16\x03\x01" + struct.pack(">H", len(body) - half) + body[half:])
        self.assertEqual(proxy.tls_server_name(two), ("tls", "split.example"))

    def test_partial_hello_asks_for_more(self):
        hello = client_hello("example.org")
        for cut in (0, 1, 4, 5, 40, len(hello) - 1):
            self.assertEqual(proxy.tls_server_name(hello[:cut])[0], "more", cut)

    def test_not_tls(self):
        for data in (b"GET / HTTP/1.1\r\n", b"SSH-2.0-x\r\n", b"\x16\x05\x00\x00\x01x", b"\x00"):
            self.assertEqual(proxy.tls_server_name(data)[0], "other", data)

    def test_garbled_hello_has_no_name(self):
        hello = bytearray(client_hello("example.org"))
        hello[50:] = b"\xff" * (len(hello) - 50)
        self.assertEqual(proxy.tls_server_name(bytes(hello)), ("tls", None))

    def test_http_head(self):
        state, head = proxy.http_head(b"GET /x HTTP/1.1\r\nHost: Example.ORG:8080\r\n\r\nbody")
        self.assertEqual(state, "http")
        self.assertEqual(head[:3], (b"GET", b"/x", b"HTTP/1.1"))
        self.assertEqual(head[4], b"body")
        self.assertEqual(proxy.kind_of(b"GET /x HTTP/1.1\r\nHost: Example.ORG:8080\r\n\r\n"), ("http", ["example.org"]))
        self.assertEqual(proxy.http_head(b"GET /x HT")[0], "more")
        self.assertEqual(proxy.http_head(b"HELLO")[0], "other")

    def test_host_of(self):
        self.assertEqual(proxy.host_of(b"Example.com.", 80), ("example.com", 80))
        self.assertEqual(proxy.host_of(b"example.com:8443", 443), ("example.com", 8443))
        self.assertEqual(proxy.host_of(b"[2001:db8::1]:22", 443), ("2001:db8::1", 22))
        self.assertEqual(proxy.host_of(b"[::1]", 443), ("::1", 443))
        for bad in (b"x:0", b"x:65536", b"x:http", b"x:-1"):
            with self.assertRaises(ValueError):
                proxy.host_of(bad, 80)

    def test_kinds(self):
        self.assertEqual(proxy.kind_of(b"SSH-2.0-OpenSSH_9.2\r\n"), ("ssh", []))
        self.assertEqual(proxy.kind_of(b"SS"), ("more", []))
        self.assertEqual(proxy.kind_of(b"\x00\x01"), ("other", []))


class AnswerTest(unittest.TestCase):
    def test_403_is_one_line(self):
        out = proxy.failed(403, "blocked x.example\r\nInjected: yes")
        head, body = out.split(b"\r\n\r\n", 1)
        self.assertTrue(head.startswith(b"HTTP/1.1 403 blocked x.example  Injected: yes\r\n"))
        self.assertEqual(body, b"blocked x.example  Injected: yes\n")
        self.assertNotIn(b"\r\nInjected", head)

    def test_ssh_disconnect_is_a_valid_packet(self):
        out = proxy.ssh_disconnect("pilot-sandbox blocked github.com:22")
        banner, packet = out.split(b"\r\n", 1)
        self.assertEqual(banner, b"SSH-2.0-pilot-sandbox")
        length, pad = struct.unpack(">IB", packet[:5])
        self.assertEqual(len(packet), 4 + length)
        self.assertEqual(len(packet) % 8, 0)
        self.assertGreaterEqual(pad, 4)
        payload = packet[5:4 + length - pad]
        self.assertEqual(payload[0], 1)  # SSH_MSG_DISCONNECT
        code, n = struct.unpack(">II", payload[1:9])
        self.assertEqual(code, 2)
        self.assertEqual(payload[9:9 + n], b"pilot-sandbox blocked github.com:22")

    def test_port_holder(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "tcp"), "w") as f:
                f.write("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
                f.write("   0: 0100007F:3A99 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1\n")
                f.write("   1: 0100007F:3AE8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 2 1\n")
            self.assertIn("uid 1000", proxy.port_holder(socket.SOCK_STREAM, 15001, d))
            self.assertIn("another pilot-sandbox", proxy.port_holder(socket.SOCK_STREAM, 15080, d))


class ChannelTest(unittest.TestCase):
    def test_ask_waits_for_its_answer(self):
        out = io.BytesIO()
        ch = proxy.Channel(out)
        got = []
        t = threading.Thread(target=lambda: got.append(ch.ask({"t": "conn"})))
        t.start()
        while not out.getvalue():
            time.sleep(0.001)
        sent = json.loads(out.getvalue())
        ch.read(io.BytesIO(b'{"id": 999}\n' + json.dumps({"id": sent["id"], "allow": True}).encode() + b"\n"))
        t.join(5)
        self.assertEqual(got, [{"id": sent["id"], "allow": True}])

    def test_close_frees_the_waiters(self):
        ch = proxy.Channel(io.BytesIO())
        got = []
        t = threading.Thread(target=lambda: got.append(ch.ask({"t": "conn"})))
        t.start()
        time.sleep(0.05)
        ch.close()
        t.join(5)
        self.assertEqual(got, [None])

    def test_an_overlong_line_is_refused(self):
        ch = proxy.Channel(io.BytesIO())
        with self.assertRaises(ValueError):
            ch.read(io.BytesIO(b"x" * (proxy.MAX_LINE + 10)))
        with self.assertRaises(ValueError):
            ch.send({"x": "y" * proxy.MAX_LINE})


class WorkersTest(unittest.TestCase):
    def test_threads_are_reused_and_bounded(self):
        w = proxy.Workers(1)
        gate = threading.Event()
        first = w.submit(gate.wait)
        with self.assertRaises(RuntimeError):
            w.submit(print)
        gate.set()
        self.assertTrue(first.wait(5))
        ran = []
        while True:  # the thread counts itself idle just after the event
            try:
                done = w.submit(ran.append, 1)
                break
            except RuntimeError:
                time.sleep(0.001)
        self.assertTrue(done.wait(5))
        self.assertEqual((ran, w.count), ([1], 1))

    def test_a_failing_job_leaves_its_thread(self):
        w = proxy.Workers(1)
        self.assertTrue(w.submit(lambda: 1 / 0).wait(5))
        deadline = time.monotonic() + 5
        while w.idle == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        self.assertTrue(w.submit(lambda: None).wait(5))
        self.assertEqual(w.count, 1)


class FakeSidecar:
    """Answers the proxy's requests from a table: name or address -> a
    verdict; DNS queries get the query back with the reply bit set."""

    def __init__(self, verdicts):
        self.verdicts = verdicts
        self.requests = []
        r, w = os.pipe()
        self.to_proxy = os.fdopen(w, "wb", buffering=0)
        proxy_in = os.fdopen(r, "rb")
        r2, w2 = os.pipe()
        self.from_proxy = os.fdopen(r2, "rb")
        self.channel = proxy.Channel(os.fdopen(w2, "wb", buffering=0))
        threading.Thread(target=self.channel.read, args=(proxy_in,), daemon=True).start()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        for line in self.from_proxy:
            req = json.loads(line)
            self.requests.append(req)
            if req["t"] == "dns":
                q = bytearray(base64.b64decode(req["q"]))
                q[2] |= 0x80
                self.send({"id": req["id"], "a": base64.b64encode(bytes(q)).decode()})
            elif req["t"] == "conn":
                key = (req["names"] or [req["dst"]])[-1]
                v = self.verdicts.get(key, {"allow": False, "reason": "pilot-sandbox blocked %s" % key})
                self.send({"id": req["id"], **v})

    def send(self, msg):
        self.to_proxy.write(json.dumps(msg).encode() + b"\n")

    def close(self):
        self.to_proxy.close()


def serve_upstream(handler):
    """A TCP server on this machine's loopback that runs handler(conn) for
    each connection; returns its port."""
    ln = socket.socket()
    ln.bind(("127.0.0.1", 0))
    ln.listen(16)

    def loop():
        while True:
            c, _ = ln.accept()
            threading.Thread(target=handler, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    return ln.getsockname()[1]


def echo(c):
    with c:
        while True:
            d = c.recv(65536)
            if not d:
                return
            c.sendall(d)


class ProxyTest(unittest.TestCase):
    def setUp(self):
        self.upstream = serve_upstream(echo)
        self.sidecar = FakeSidecar({
            "allowed.example": {"allow": True, "dial": ["127.0.0.1"]},
            "198.18.0.7": {"allow": True, "dial": ["127.0.0.1"]},
        })
        self.dst = ("198.18.0.7", self.upstream)
        self.p = proxy.Proxy(self.sidecar.channel, original_dst=lambda c: self.dst)
        self.p.bind(ports=(0, 0, 0))
        self.p.serve()
        self.port = {k: v.getsockname()[1] for k, v in self.p.listeners.items()}

    def tearDown(self):
        self.sidecar.close()
        for ln in self.p.listeners.values():
            ln.close()

    def connect(self, listener):
        return socket.create_connection(("127.0.0.1", self.port[listener]), timeout=5)

    def test_allowed_tls_names_its_sni_and_is_joined(self):
        hello = client_hello("allowed.example")
        with self.connect("transparent") as c:
            c.sendall(hello)
            self.assertEqual(recv_n(c, len(hello)), hello)
        conn = [r for r in self.sidecar.requests if r["t"] == "conn"][0]
        self.assertEqual((conn["kind"], conn["names"], conn["dst"], conn["port"]),
                         ("tls", ["allowed.example"], "198.18.0.7", self.upstream))

    def test_denied_tls_is_reset_at_once(self):
        with self.connect("transparent") as c:
            c.sendall(client_hello("denied.example"))
            with self.assertRaises(ConnectionResetError):
                c.recv(10)

    def test_denied_http_gets_a_403_with_the_reason(self):
        with self.connect("transparent") as c:
            c.sendall(b"GET / HTTP/1.1\r\nHost: denied.example\r\n\r\n")
            reply = recv_all(c)
        self.assertTrue(reply.startswith(b"HTTP/1.1 403 pilot-sandbox blocked denied.example\r\n"), reply)
        self.assertTrue(reply.endswith(b"\r\n\r\npilot-sandbox blocked denied.example\n"), reply)

    def test_denied_ssh_gets_a_disconnect_with_the_reason(self):
        self.dst = ("198.18.0.9", 22)
        with self.connect("transparent") as c:
            c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
            reply = recv_all(c)
        self.assertEqual(reply, proxy.ssh_disconnect("pilot-sandbox blocked 198.18.0.9"))

    def test_a_silent_client_is_judged_by_address_and_served(self):
        # A server that speaks first: the client says nothing until it does.
        self.dst = ("198.18.0.7", serve_upstream(lambda c: (c.sendall(b"220 hello\r\n"), echo(c))))
        with self.connect("transparent") as c:
            self.assertEqual(recv_n(c, 11), b"220 hello\r\n")
            c.sendall(b"QUIT\r\n")
            self.assertEqual(recv_n(c, 6), b"QUIT\r\n")

    def test_connect_tunnel_and_a_fronted_sni(self):
        with self.connect("http") as c:
            c.sendall(b"CONNECT allowed.example:%d HTTP/1.1\r\nHost: x\r\n\r\n" % self.upstream)
            self.assertEqual(recv_head(c), b"HTTP/1.1 200 Connection established")
            hello = client_hello("allowed.example")
            c.sendall(hello)
            self.assertEqual(recv_n(c, len(hello)), hello)
        with self.connect("http") as c:
            c.sendall(b"CONNECT allowed.example:%d HTTP/1.1\r\n\r\n" % self.upstream)
            self.assertEqual(recv_head(c), b"HTTP/1.1 200 Connection established")
            c.sendall(client_hello("fronted.example"))
            with self.assertRaises(ConnectionResetError):
                c.recv(10)
        again = [r for r in self.sidecar.requests if r.get("of")]
        self.assertEqual(again[0]["names"], ["allowed.example", "fronted.example"])

    def test_denied_connect_gets_a_403(self):
        with self.connect("http") as c:
            c.sendall(b"CONNECT denied.example:443 HTTP/1.1\r\n\r\n")
            self.assertEqual(recv_head(c), b"HTTP/1.1 403 pilot-sandbox blocked denied.example")

    def test_absolute_url_is_sent_in_origin_form(self):
        with self.connect("http") as c:
            c.sendall(b"GET http://allowed.example:%d/a/b?c HTTP/1.1\r\nHost: allowed.example\r\n"
                      b"Proxy-Connection: keep-alive\r\nX-Y: z\r\n\r\n" % self.upstream)
            c.shutdown(socket.SHUT_WR)
            echoed = recv_all(c)
        self.assertEqual(echoed, b"GET /a/b?c HTTP/1.1\r\nHost: allowed.example\r\nX-Y: z\r\nConnection: close\r\n\r\n")

    def test_a_host_header_naming_another_host_is_judged_too(self):
        with self.connect("http") as c:
            c.sendall(b"GET http://allowed.example:%d/ HTTP/1.1\r\nHost: denied.example\r\n\r\n" % self.upstream)
            self.assertTrue(recv_all(c).startswith(b"HTTP/1.1 403"))

    def test_not_a_proxy_request(self):
        with self.connect("http") as c:
            c.sendall(b"GET / HTTP/1.1\r\n\r\n")
            self.assertTrue(recv_all(c).startswith(b"HTTP/1.1 400"))

    def test_dns_over_udp_and_tcp(self):
        query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01x\x00\x00\x01\x00\x01"
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(5)
        u.sendto(query, ("127.0.0.1", self.port["dns_udp"]))
        self.assertEqual(u.recv(512)[:3], b"\x12\x34\x81")
        with self.connect("dns_tcp") as c:
            c.sendall(struct.pack(">H", len(query)) + query)
            n = struct.unpack(">H", recv_n(c, 2))[0]
            self.assertEqual(recv_n(c, n)[:3], b"\x12\x34\x81")

    def test_connections_beyond_the_bound_are_reset(self):
        old = self.p.held
        self.p.held = threading.BoundedSemaphore(1)
        try:
            with self.connect("transparent") as held:  # silent: held while judged
                time.sleep(0.01)
                with self.assertRaises(ConnectionResetError):
                    with self.connect("transparent") as c:
                        c.recv(10)
        finally:
            self.p.held = old


def recv_n(c, n):
    data = b""
    while len(data) < n:
        chunk = c.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def recv_all(c):
    data = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            return data
        data += chunk


def recv_head(c):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(1)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n")[0]


if __name__ == "__main__":
    unittest.main()
