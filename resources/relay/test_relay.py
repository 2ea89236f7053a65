"""Tests of the relay (pilot_relay.py): the frame codec, the one pump and its
half-closes, the secret's check, the forward listener's queue and its
hand-over of connections to relays, and each role run as the sidecar runs
it, in a process of its own. They need only Python and a loopback, and run
on the host's python3 and in the sandbox image (resources/relay_test.go).

    cd resources/relay && python3 -B -m unittest -v
"""

import hmac
import os
import socket
import subprocess
import sys
import threading
import unittest
import uuid
from unittest import mock

import pilot_relay as relay

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 10


def frame(data):
    return len(data).to_bytes(4, "big") + data


class SidecarEnd:
    """The sidecar's end of a relay's stdin and stdout, for a Frames made on
    the other ends of two pipes."""

    def __init__(self):
        in_r, self.stdin = os.pipe()
        stdout, self.out_w = os.pipe()
        self.frames = relay.Frames(open(in_r, "rb", buffering=relay.CHUNK), self.out_w)
        self.out = open(stdout, "rb", buffering=0)

    def send(self, data):
        os.write(self.stdin, data)

    def let_go(self):
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin = None

    def close(self):
        self.let_go()
        self.frames.rfile.close()
        os.close(self.out_w)
        self.out.close()

    def read_frame(self):
        head = self.read_exact(4)
        return self.read_exact(int.from_bytes(head, "big"))

    def read_exact(self, n):
        got = b""
        while len(got) < n:
            d = self.out.read(n - len(got))
            if not d:
                raise EOFError("the relay's stdout ended after %r" % got)
            got += d
        return got

    def read_until_end(self):
        """The payload of every frame up to the end frame."""
        got = b""
        while True:
            d = self.read_frame()
            if not d:
                return got
            got += d


def read_all(s):
    """What s reads to its end (a reset ends it too)."""
    s.settimeout(TIMEOUT)
    got = b""
    while True:
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            return got
        if not d:
            return got
        got += d


def in_thread(f, *args):
    t = threading.Thread(target=f, args=args, daemon=True)
    t.start()
    return t


class Case(unittest.TestCase):
    """Closes what a test opens."""

    def sidecar(self):
        sc = SidecarEnd()
        self.addCleanup(sc.close)
        return sc

    def pair(self):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        return a, b

    def closing(self, s):
        self.addCleanup(s.close)
        return s


class FramesTest(Case):
    def test_frames_round_trip_and_end(self):
        sc = self.sidecar()
        sc.send(frame(b"hello") + frame(b"") + frame(b"x"))
        self.assertEqual(sc.frames.read(), b"hello")
        self.assertEqual(sc.frames.read(), b"", "a frame of length 0 is the end")
        # From another thread: a pipe may hold a single page (a user past
        # fs.pipe-user-pages-soft, as a busy sandbox user can be).
        in_thread(lambda: (sc.frames.write(b"a" * 30000), sc.frames.close_write()))
        self.assertEqual(sc.read_frame(), b"a" * 30000)
        self.assertEqual(sc.read_frame(), b"")

    def test_a_stream_that_ends_without_its_end_frame_is_broken(self):
        for sent in (b"", b"\0\0", frame(b"abc")[:-1]):
            with self.subTest(sent=sent):
                sc = self.sidecar()
                sc.send(sent)
                sc.let_go()
                with self.assertRaises(relay.Broken):
                    sc.frames.read()

    def test_a_frame_longer_than_any_sidecar_sends_is_broken(self):
        sc = self.sidecar()
        sc.send((relay.MAX_FRAME + 1).to_bytes(4, "big"))
        with self.assertRaises(relay.Broken):
            sc.frames.read()

    def test_write_all_writes_what_one_call_leaves(self):
        r, w = os.pipe()
        parts = [b"head", b"x" * 1000]
        with mock.patch.object(relay.os, "writev", lambda fd, p: os.write(fd, p[0][:2])):
            relay.write_all(w, parts)
        os.close(w)
        with open(r, "rb") as f:
            self.assertEqual(f.read(), b"".join(parts))


class CarryTest(Case):
    """The pump between a socket in the sandbox (a socketpair here) and the
    sidecar's frames."""

    def carry(self):
        app, inside = self.pair()
        sc = self.sidecar()
        t = in_thread(relay.carry, relay.Sock(inside), sc.frames)
        return app, sc, t

    def test_each_side_ends_its_output_alone(self):
        app, sc, t = self.carry()
        # The sandbox's program says its piece and ends its output; it still
        # reads what the sidecar sends after that.
        app.sendall(b"from the sandbox")
        app.shutdown(socket.SHUT_WR)
        self.assertEqual(sc.read_until_end(), b"from the sandbox")
        sc.send(frame(b"from the host") + frame(b""))
        self.assertEqual(read_all(app), b"from the host")
        t.join(TIMEOUT)
        self.assertFalse(t.is_alive(), "carry did not return once both sides ended")

    def test_the_hosts_end_comes_first(self):
        app, sc, t = self.carry()
        sc.send(frame(b"request") + frame(b""))
        self.assertEqual(read_all(app), b"request")
        app.sendall(b"answer")
        app.close()
        self.assertEqual(sc.read_until_end(), b"answer")
        t.join(TIMEOUT)
        self.assertFalse(t.is_alive())

    def test_the_sidecar_letting_go_drops_the_connection(self):
        app, sc, t = self.carry()
        sc.send(frame(b"partial"))
        sc.let_go()  # no end frame
        t.join(TIMEOUT)
        self.assertFalse(t.is_alive(), "carry did not return when the sidecar let go")
        self.assertEqual(read_all(app), b"partial")

    def test_big_transfers_arrive_whole(self):
        app, sc, t = self.carry()
        blob = os.urandom(3 << 20)
        in_thread(lambda: (app.sendall(blob), app.shutdown(socket.SHUT_WR)))
        self.assertEqual(sc.read_until_end(), blob)
        sc.send(frame(b""))
        t.join(TIMEOUT)
        self.assertFalse(t.is_alive())

    def test_two_sockets(self):
        a, a_in = self.pair()
        b, b_in = self.pair()
        t = in_thread(relay.carry, relay.Sock(a_in), relay.Sock(b_in))
        a.sendall(b"ping")
        a.shutdown(socket.SHUT_WR)
        self.assertEqual(read_all(b), b"ping")
        b.sendall(b"pong")
        b.close()
        self.assertEqual(read_all(a), b"pong")
        t.join(TIMEOUT)
        self.assertFalse(t.is_alive())


class SecretTest(Case):
    def admit(self, sent, close=True):
        c, peer = self.pair()
        peer.sendall(sent)
        if close:
            peer.shutdown(socket.SHUT_WR)
        return relay.admitted(c, b"s3cret", timeout=0.5), c

    def test_the_secret_and_a_newline_let_a_connection_in(self):
        ok, c = self.admit(b"s3cret\nafter", close=False)
        self.assertTrue(ok)
        self.assertEqual(c.recv(5), b"after", "bytes past the secret are left to carry")

    def test_anything_else_closes_it(self):
        for sent in (b"", b"s3cre", b"s3cret", b"s3creT\n", b"x" * 100):
            with self.subTest(sent=sent):
                ok, c = self.admit(sent)
                self.assertFalse(ok)
                self.assertEqual(c.fileno(), -1, "the connection is closed")

    def test_a_connection_that_says_nothing_is_closed_after_the_timeout(self):
        ok, c = self.admit(b"s3", close=False)
        self.assertFalse(ok)

    def test_the_comparison_takes_the_same_time_whatever_the_bytes(self):
        with mock.patch.object(hmac, "compare_digest", wraps=hmac.compare_digest) as compare:
            self.admit(b"s3creX\n")
        compare.assert_called_once_with(b"s3creX\n", b"s3cret\n")

    def test_the_secret_line_is_bounded(self):
        r, w = os.pipe()
        os.write(w, b"x" * 1000)
        os.close(w)
        with open(r, "rb") as f:
            self.assertEqual(len(relay.read_secret(f)), relay.MAX_LINE)


class ListenerTest(Case):
    def test_at_most_cap_connections_wait(self):
        told = []
        l = relay.Listener(2, b"s", lambda: told.append("c"))
        pairs = [self.pair() for _ in range(3)]
        self.assertEqual([l.offer(inside) for _, inside in pairs], [True, True, False])
        self.assertEqual(told, ["c", "c"], "only the queued connections are reported")
        outside, _ = pairs[2]
        self.assertEqual(read_all(outside), b"", "the one past the cap is closed at once")
        self.assertIs(l.next(), pairs[0][1], "first in, first out")

    def test_a_relay_gets_the_connection_as_a_file_descriptor(self):
        l = relay.Listener(4, b"s", lambda: None)
        u = self.closing(socket.socket(socket.AF_UNIX))
        name = "pilot-relay-test-" + uuid.uuid4().hex
        u.bind("\0" + name)
        u.listen()
        in_thread(l.hand, u)
        outside, inside = self.pair()
        l.offer(inside)
        r = self.closing(socket.socket(socket.AF_UNIX))
        r.connect("\0" + name)
        msg, fds, _, _ = socket.recv_fds(r, 1, 1)
        self.assertEqual((msg, len(fds)), (relay.READY, 1))
        taken = self.closing(socket.socket(fileno=fds[0]))
        taken.sendall(b"through the passed socket")
        self.assertEqual(outside.recv(100), b"through the passed socket")

    def test_a_relay_of_another_user_gets_nothing(self):
        l = relay.Listener(4, b"s", lambda: None)
        u = self.closing(socket.socket(socket.AF_UNIX))
        name = "pilot-relay-test-" + uuid.uuid4().hex
        u.bind("\0" + name)
        u.listen()
        outside, inside = self.pair()
        l.offer(inside)
        with mock.patch.object(relay, "peer_uid", lambda r: os.getuid() + 1):
            in_thread(l.hand, u)
            r = self.closing(socket.socket(socket.AF_UNIX))
            r.connect("\0" + name)
            r.settimeout(TIMEOUT)
            msg, fds, _, _ = socket.recv_fds(r, 1, 1)
        self.assertEqual((msg, fds), (b"", []), "it is closed without a connection")
        self.assertIs(l.next(), inside, "the connection waits for a relay of the listener's user")

    def test_peer_uid_is_the_other_ends_user(self):
        a, b = self.pair()
        self.assertEqual(relay.peer_uid(a), os.getuid())

    def test_a_direct_connection_with_the_secret_takes_the_next_connection(self):
        l = relay.Listener(4, b"s3cret", lambda: None)
        outside, inside = self.pair()
        l.offer(inside)
        x, x_in = self.pair()
        t = in_thread(l.direct, x_in)
        x.sendall(b"s3cret\nhello")
        x.shutdown(socket.SHUT_WR)
        self.assertEqual(outside.recv(100), b"hello")
        outside.close()
        self.assertEqual(read_all(x), b"")
        t.join(TIMEOUT)
        self.assertFalse(t.is_alive())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_once(handle):
    """A server on the loopback that runs handle on its first connection."""
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen()

    def run():
        with l:
            c, _ = l.accept()
        with c:
            handle(c)

    in_thread(run)
    return l.getsockname()[1]


def echo_upper(c):
    c.sendall(read_all(c).upper())


class Process:
    """The relay started as the sidecar starts it: python3 -I -S -c SOURCE."""

    def __init__(self, *args):
        with open(os.path.join(HERE, "pilot_relay.py")) as f:
            source = f.read()
        self.p = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", source] + [str(a) for a in args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)

    def send(self, data):
        self.p.stdin.write(data)

    def read(self, n):
        got = b""
        while len(got) < n:
            d = self.p.stdout.read(n - len(got))
            if not d:
                raise EOFError("stdout ended after %r; stderr: %s" % (got, self.p.stderr.read()))
            got += d
        return got

    def line(self):
        return self.p.stdout.readline().decode()

    def read_until_end(self):
        got = b""
        while True:
            n = int.from_bytes(self.read(4), "big")
            if n == 0:
                return got
            got += self.read(n)

    def exit_code(self):
        self.p.stdin.close()
        return self.p.wait(TIMEOUT)

    def stop(self):
        self.p.kill()
        self.p.wait()
        for f in (self.p.stdin, self.p.stdout, self.p.stderr):
            f.close()


class RolesTest(Case):
    def start(self, *args):
        p = Process(*args)
        self.addCleanup(p.stop)
        return p

    def test_connect_waits_for_the_go_byte_then_carries(self):
        port = serve_once(echo_upper)
        p = self.start("connect", port)
        self.assertEqual(p.read(1), b"+")
        p.send(b"\n" + frame(b"hello") + frame(b""))
        self.assertEqual(p.read_until_end(), b"HELLO")
        self.assertEqual(p.exit_code(), 0)

    def test_connect_ends_when_let_go_before_its_connection(self):
        p = self.start("connect", free_port())
        self.assertEqual(p.read(1), b"+")
        self.assertEqual(p.exit_code(), 0)

    def test_connect_says_why_nothing_answers(self):
        p = self.start("connect", free_port())
        p.read(1)
        p.send(b"\n")
        self.assertEqual(p.p.wait(TIMEOUT), 3)
        self.assertIn(b"connect to 127.0.0.1", p.p.stderr.read())

    def test_gateway_joins_connections_that_bring_the_secret(self):
        port = serve_once(echo_upper)
        p = self.start("gateway", port)
        p.send(b"s3cret\n")
        line = p.line()
        self.assertRegex(line, r"^\+\d+\n$", "only its port: the sidecar takes the address from the engine")
        gport = line[1:]
        for sent, want in ((b"wrong!\n", b""), (b"s3cret\nhi", b"HI")):
            c = self.closing(socket.create_connection(("127.0.0.1", int(gport)), timeout=TIMEOUT))
            c.sendall(sent)
            c.shutdown(socket.SHUT_WR)
            self.assertEqual(read_all(c), want)
        self.assertEqual(p.exit_code(), 0)

    def test_listen_hands_connections_to_relays(self):
        port = free_port()
        name = "pilot-relay-test-" + uuid.uuid4().hex
        listener = self.start("listen", port, name, 4, "pilot-carry-test-" + uuid.uuid4().hex)
        listener.send(b"s3cret\n")
        self.assertTrue(listener.line().startswith("+"))
        client = self.closing(socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT))
        self.assertEqual(listener.read(1), b"c", "the listener reports the connection")
        take = self.start("take", name)
        self.assertEqual(take.read(1), b"+")
        client.sendall(b"up")
        client.shutdown(socket.SHUT_WR)
        self.assertEqual(take.read_until_end(), b"up")
        take.send(frame(b"down") + frame(b""))
        self.assertEqual(read_all(client), b"down")
        self.assertEqual(take.exit_code(), 0)
        self.assertEqual(listener.exit_code(), 0)

    def test_listen_says_when_the_port_is_taken(self):
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        self.addCleanup(busy.close)
        p = self.start("listen", busy.getsockname()[1], "pilot-relay-test-" + uuid.uuid4().hex, 4, "pilot-carry-test-" + uuid.uuid4().hex)
        p.send(b"s3cret\n")
        self.assertEqual(p.p.wait(TIMEOUT), 4)
        self.assertEqual(p.p.stderr.read(), b"in use\n")

    def test_listen_says_when_the_same_forward_is_carried(self):
        port, carry = free_port(), "pilot-carry-test-" + uuid.uuid4().hex
        first = self.start("listen", port, "pilot-relay-test-" + uuid.uuid4().hex, 4, carry)
        first.send(b"s3cret\n")
        self.assertTrue(first.line().startswith("+"))
        for _ in range(20):  # more than the mark's backlog: each is accepted and closed
            second = self.start("listen", port, "pilot-relay-test-" + uuid.uuid4().hex, 4, carry)
            second.send(b"s3cret\n")
            self.assertEqual(second.p.wait(TIMEOUT), 4)
            self.assertEqual(second.p.stderr.read(), b"carried\n")
        other = self.start("listen", port, "pilot-relay-test-" + uuid.uuid4().hex, 4, "pilot-carry-test-" + uuid.uuid4().hex)
        other.send(b"s3cret\n")
        self.assertEqual(other.p.wait(TIMEOUT), 4)
        self.assertEqual(other.p.stderr.read(), b"in use\n", "another forward of the port (another host port) is not it")
        self.assertEqual(first.exit_code(), 0)
        again = self.start("listen", port, "pilot-relay-test-" + uuid.uuid4().hex, 4, carry)
        again.send(b"s3cret\n")
        self.assertTrue(again.line().startswith("+"), "the port and the mark are free once the first ended")

    def test_a_mark_held_by_someone_else_is_not_believed(self):
        self.assertFalse(relay.carried("pilot-carry-test-" + uuid.uuid4().hex), "nobody holds it")
        with mock.patch.object(relay, "peer_uid", return_value=os.getuid() + 1):
            carry = "pilot-carry-test-" + uuid.uuid4().hex
            m = self.closing(socket.socket(socket.AF_UNIX))
            m.bind("\0" + carry)
            m.listen()
            self.assertFalse(relay.carried(carry), "held by another user")

    def test_take_ends_when_let_go_first(self):
        name = "pilot-relay-test-" + uuid.uuid4().hex
        listener = self.start("listen", free_port(), name, 4, "pilot-carry-test-" + uuid.uuid4().hex)
        listener.send(b"s3cret\n")
        listener.line()
        take = self.start("take", name)
        self.assertEqual(take.exit_code(), 0)

    def test_a_wrong_role_or_arguments_are_refused(self):
        for args in ((), ("fly",), ("connect",), ("connect", 1, 2)):
            with self.subTest(args=args):
                p = self.start(*args)
                self.assertEqual(p.p.wait(TIMEOUT), 2)
                self.assertIn(b"usage", p.p.stderr.read())


if __name__ == "__main__":
    unittest.main()
